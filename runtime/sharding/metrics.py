"""The sharding families: the reference sharder's counters under kubetrio's prefix, plus what
an operator asks first (how many objects each shard has, how long drains take)."""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

DRAIN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120)


class ShardingMetrics:
    """One set per registry: a manager's sharder and shard gate write to the same series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.objects = Gauge(
            "kubetrio_sharding_shard_objects",
            "Objects assigned to each shard of a ring, counted at the sharder's last sync",
            ["ring", "shard"],
            registry=registry,
        )
        self.movements = Counter(
            "kubetrio_sharding_movements_total",
            "Objects the sharder assigned to a shard (new, moved or from a dead shard)",
            ["ring", "group", "resource"],
            registry=registry,
        )
        self.drains = Counter(
            "kubetrio_sharding_drains_total",
            "Objects the sharder asked their shard to let go of",
            ["ring", "group", "resource"],
            registry=registry,
        )
        self.drain_duration = Histogram(
            "kubetrio_sharding_drain_duration_seconds",
            "From the sharder's drain label to the object's assignment to its new shard",
            ["ring"],
            buckets=DRAIN_BUCKETS,
            registry=registry,
        )
        self.ring_calculations = Counter(
            "kubetrio_sharding_ring_calculations_total",
            "Times the sharder rebuilt the ring because its available shards changed",
            ["ring"],
            registry=registry,
        )
        self.shards = Gauge(
            "kubetrio_sharding_shards",
            "Shards of a ring by state, as the sharder observes their Leases",
            ["ring", "state"],
            registry=registry,
        )
        self.acknowledged = Counter(
            "kubetrio_sharding_drains_acknowledged_total",
            "Drains this shard acknowledged by letting go of the object",
            ["ring", "shard"],
            registry=registry,
        )


_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, ShardingMetrics] = (
    weakref.WeakKeyDictionary()
)


def sharding_metrics(registry: CollectorRegistry) -> ShardingMetrics:
    metrics = _by_registry.get(registry)
    if metrics is None:
        metrics = _by_registry[registry] = ShardingMetrics(registry)
    return metrics
