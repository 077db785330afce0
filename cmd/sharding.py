"""Sharding for the command line: the ``sharding`` section as the runtime's options, the kinds
the enabled controllers put in the ring, and the permissions sharding adds (shared by ``run``,
``sharder``, ``rbac`` and ``manifests``)."""

from __future__ import annotations

import msgspec
from prometheus_client import CollectorRegistry

from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.config.sections import LeaderElectionConfig, ShardingConfig
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.gen.rbac import Permissions
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.runtime.sharding import member, sharder
from kubetrio.runtime.sharding.options import ShardingOptions, default_shard_id
from kubetrio.runtime.sharding.sharder import ShardedKind

__all__ = ["sharded_kinds", "sharding_options", "sharding_permissions"]

# Nothing is sent: the kinds are read off controllers set up in a manager never run.
_NOWHERE = "http://127.0.0.1:1"


def sharding_options(
    config: ManagerConfig, lease_namespace: str, *, sharder: bool = False
) -> ShardingOptions | None:
    """None unless ``sharding.enabled``; the shard Leases default to the leader's namespace.
    ``sharder``: for the ``kubetrio sharder`` process, which always runs the sharder."""
    section = config.sharding
    if not section.enabled:
        return None
    return ShardingOptions(
        ring=section.ring,
        namespace=section.namespace or lease_namespace,
        shard_id=section.shard_id or default_shard_id(),
        lease_duration=float(section.lease_duration),
        renew_deadline=float(section.renew_deadline),
        retry_period=float(section.retry_period),
        sync_period=float(section.sync_period),
        run_sharder=sharder or section.run_sharder,
        concurrent_moves=section.concurrent_moves,
        webhook=section.webhook,
    )


def sharded_kinds(
    registry: ControllerRegistry, config: ManagerConfig | None = None
) -> list[ShardedKind]:
    """The kinds ``config``'s controllers (the default set when None) put in the ring: they
    are set up, sharded, in a manager that never runs."""
    config = config or ManagerConfig()
    if not config.sharding.enabled:
        config = msgspec.structs.replace(
            config,
            sharding=ShardingConfig(enabled=True),
            leader_election=LeaderElectionConfig(enabled=True),
        )
    if config.storage.backend_url is None:  # a backend set up is quiet, and never called
        config = msgspec.structs.replace(
            config, storage=msgspec.structs.replace(config.storage, backend_url=_NOWHERE)
        )
    probe = Manager(
        Client.from_url(_NOWHERE),
        registry=CollectorRegistry(auto_describe=True),
        sharding=ShardingOptions(
            ring=config.sharding.ring, namespace="default", shard_id="probe", run_sharder=False
        ),
    )
    for name in config.controllers:
        registry.setup(name)(probe, config)
    assert probe.shard is not None
    return list(probe.shard.kinds)


def sharding_permissions(kinds: list[ShardedKind]) -> Permissions:
    """A replica's shard Lease and, on the leader, the sharder's: every ring Lease, and every
    sharded kind listed, watched and labelled (a shard's drain acknowledgement is a patch
    too, which the controllers' own rules do not always grant)."""
    return member.RBAC + sharder.rbac_for(kinds)
