"""What a replica needs to know to take part in a ring: ``Manager(sharding=...)``."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field

from kubetrio.runtime.sharding.labels import MAX_RING_NAME

# A label key's name part; also a label value (the shard id is one on every object).
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
# A Lease's name (a DNS subdomain) that is also a label value: lower case, at most 63.
_SHARD_ID = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


def default_shard_id() -> str:
    """The host name: a Deployment's pod name, unique among its replicas."""
    return socket.gethostname().lower()


@dataclass(frozen=True, slots=True)
class ShardingOptions:
    """A replica's part in ring ``ring``: its shard Lease ``namespace/shard_id`` (labelled
    with the ring, renewed with leader election's timing and fenced the same way), and, while
    it leads, the sharder that assigns objects to the ring's shards (``run_sharder``; turn it
    off when a separate process runs the sharder). The sharder resyncs every object every
    ``sync_period`` seconds besides reacting to changes."""

    ring: str
    namespace: str
    shard_id: str = field(default_factory=default_shard_id)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    sync_period: float = 300.0
    run_sharder: bool = True
    # At most this many labels written at once by the sharder (the reference's concurrentMoves).
    concurrent_moves: int = 100
    # Serve the admission webhook that assigns objects at creation (``sharding.webhook``).
    webhook: bool = False

    def __post_init__(self) -> None:
        if len(self.ring) > MAX_RING_NAME or not _LABEL_NAME.match(self.ring):
            raise ValueError(
                f"sharding.ring: {self.ring!r} must be 1-{MAX_RING_NAME} letters, digits, '-', "
                "'_' or '.', starting and ending with a letter or digit (it names a label key)"
            )
        if not self.namespace:
            raise ValueError("sharding.namespace: the shard Leases' namespace must be set")
        if len(self.shard_id) > 63 or not _SHARD_ID.match(self.shard_id):
            raise ValueError(
                f"sharding.shard_id: {self.shard_id!r} must be 1-63 lower-case letters, digits, "
                "'-' or '.', starting and ending with a letter or digit (it names a Lease and "
                "is a label value)"
            )
        if not (self.lease_duration > self.renew_deadline > self.retry_period > 0):
            raise ValueError(
                "sharding: needs lease_duration > renew_deadline > retry_period > 0, got "
                f"{self.lease_duration}/{self.renew_deadline}/{self.retry_period}"
            )
        if self.sync_period <= 0:
            raise ValueError(f"sharding.sync_period: must be positive, got {self.sync_period}")
        if self.concurrent_moves < 1:
            raise ValueError(
                f"sharding.concurrent_moves: must be at least 1, got {self.concurrent_moves}"
            )
