"""The ``sharding`` section as the runtime's options, shared by ``run`` and ``sharder``."""

from __future__ import annotations

from kubetrio.cmd.config import ManagerConfig
from kubetrio.runtime.sharding.options import ShardingOptions, default_shard_id

__all__ = ["sharding_options"]


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
