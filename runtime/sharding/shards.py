"""Shard states, read from the shard Leases as the sharder observes them.

The states are the reference design's: ``ready`` (renewed lately), ``expired`` (its renew time
plus duration has passed on the wall clock, but the sharder has not yet watched it stand still
for a whole lease duration), ``uncertain`` (the sharder has watched the record unchanged for
its lease duration: the sharder takes the Lease over), ``dead`` (released by its shard on
shutdown, or taken over) and ``orphaned`` (dead for ``ORPHAN_AFTER``: the sharder deletes it).
Ready, expired and uncertain shards keep their objects; a dead shard's move at once, without
a drain, since it can no longer act on them.

As for leader election, expiry is decided by how long *this* process has watched a record
stand still, on the trio clock, never by comparing another replica's wall clock with ours. A
shard acts only until its renew deadline (shorter than the lease duration) after the last
renewal it sent, and the sharder starts counting only when it observes that renewal, later:
so by the time the sharder takes a Lease over, its shard has stopped.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kubetrio.api.coordination import Lease
from kubetrio.api.meta import parse_time
from kubetrio.runtime.util.clock import now as wall_now

SHARDER_IDENTITY = "kubetrio-sharder"
ORPHAN_AFTER = 60.0  # seconds dead before the sharder deletes the Lease
DEFAULT_LEASE_DURATION = 15.0


class ShardState(enum.Enum):
    """A shard's state as the sharder sees its Lease (the reference design's names)."""

    READY = "ready"
    EXPIRED = "expired"
    UNCERTAIN = "uncertain"
    DEAD = "dead"
    ORPHANED = "orphaned"

    @property
    def available(self) -> bool:
        """Whether the shard keeps (and may be given) objects."""
        return self in (ShardState.READY, ShardState.EXPIRED, ShardState.UNCERTAIN)


@dataclass(frozen=True, slots=True)
class Shard:
    """One member of a ring: its id (its Lease's name) and state."""

    id: str
    state: ShardState
    # Seconds (trio clock) until the state may change without the Lease changing.
    next_change: float


class LeaseObserver:
    """Remembers when each shard Lease's record last changed, as seen from here."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[Any, ...], float]] = {}

    def shard(self, lease: Lease, now: float) -> Shard:
        spec = lease.spec
        name = lease.metadata.name
        record = (
            spec.holder_identity,
            spec.renew_time,
            spec.acquire_time,
            spec.lease_transitions,
            spec.lease_duration_seconds,
        )
        seen = self._seen.get(name)
        if seen is None or seen[0] != record:
            seen = self._seen[name] = (record, now)
        since = now - seen[1]
        if spec.holder_identity != name:  # released (empty) or taken over
            if since >= ORPHAN_AFTER:
                return Shard(name, ShardState.ORPHANED, 0.0)
            return Shard(name, ShardState.DEAD, ORPHAN_AFTER - since)
        duration = float(spec.lease_duration_seconds or DEFAULT_LEASE_DURATION)
        if since >= duration:
            return Shard(name, ShardState.UNCERTAIN, 0.0)
        renewed = parse_time(spec.renew_time)
        expired = renewed is not None and (wall_now() - renewed).total_seconds() > duration
        return Shard(name, ShardState.EXPIRED if expired else ShardState.READY, duration - since)

    def forget(self, name: str) -> None:
        self._seen.pop(name, None)
