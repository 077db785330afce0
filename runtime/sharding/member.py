"""This replica as a member of a ring: its shard Lease, the fence it answers, and the client
sharded controllers write through.

The Lease is held with leader election's elector (``kubetrio.runtime.leaderelection``) on a
Lease of the replica's own, named by its shard id and labelled with the ring: every replica
"leads" its own Lease, so no replica waits for another. Sharded controllers run only while it
is held, and their writes pass its fence, exactly as leader-only work passes the leader's: a
shard frozen or cut off past its renew deadline writes nothing more, and the manager exits so
that a restart joins the ring again.
"""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import CollectorRegistry

from kubetrio.api.coordination import Lease
from kubetrio.api.meta import KubeObject
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.gen.rbac import Permissions, on
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions, LeaderElector
from kubetrio.runtime.leaderelection.fence import Fence
from kubetrio.runtime.sharding.gate import InFlight
from kubetrio.runtime.sharding.labels import RING_LABEL
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.sharder import ShardedKind

# The shard's own Lease, as the leader Lease: read, made, renewed and released by JSON patches.
# A shard's objects need ``patch`` on their kind besides (the drain acknowledgement).
RBAC = Permissions(own_namespace=(on(Lease.KIND, "get", "create", "patch"),))


class ShardMember:
    """``manager.shard``: ``id``, ``ring``, the shard ``client`` (writes fenced by the shard
    Lease; give it to a sharded controller's reconciler) and the kinds the ring shards."""

    def __init__(
        self, client: Client, options: ShardingOptions, registry: CollectorRegistry | None
    ) -> None:
        self.options = options
        self.id = options.shard_id
        self.ring = options.ring
        self.elector = LeaderElector(
            client.with_own_limits(),  # renewals never queue behind the controllers' requests
            LeaderElectionOptions(
                namespace=options.namespace,
                name=options.shard_id,
                identity=options.shard_id,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                labels={RING_LABEL: options.ring},
            ),
            registry=registry,
        )
        self.fence = Fence(
            self.elector.holds_lease,
            self.elector.holds_lease_at,
            lease=f"shard lease {options.namespace}/{options.shard_id}",
        )
        self.client = client.fenced(self.fence)
        self.kinds: list[ShardedKind] = []
        self._in_flight: dict[type[KubeObject], InFlight] = {}

    def shard_kind(self, kind: ShardedKind) -> None:
        """Put ``kind`` in the ring (the builder's ``.sharded()`` does, for each source). A
        kind one controller reconciles and another owns becomes one owned, reconciled kind."""
        for index, known in enumerate(self.kinds):
            if known.kind is not kind.kind:
                continue
            if (known.namespace, known.label_selector) != (kind.namespace, kind.label_selector):
                raise ValueError(
                    f"sharding: {kind.kind.__name__} is sharded with other namespaces or "
                    "selectors by another controller; a kind is sharded one way"
                )
            if known != kind:
                self.kinds[index] = replace(
                    known,
                    controlled=True,
                    reconciled=known.drains or kind.drains,
                )
            return
        self.kinds.append(kind)

    def in_flight(self, kind: type[KubeObject]) -> InFlight:
        """The keys of ``kind`` this shard's controllers are reconciling: a gate lets go of a
        drained object only once every controller of its kind here is done with it."""
        return self._in_flight.setdefault(kind, InFlight())
