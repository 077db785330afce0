"""``kubetrio_drain_*``: how long drains take, how evictions end, where pods spend the time."""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter, Histogram

# Every series exists from the start, so the first drain's increase is visible to rate()
# (a series born at its first observation has no earlier sample to differ from).
RESULTS = ("success", "failed")
EVICTION_RESULTS = ("evicted", "deleted", "not_found", "pdb_blocked", "pdb_misconfigured", "failed")
POD_PHASES = ("evict", "terminate", "detach", "reattach")
DRAIN_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
POD_PHASE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)


class DrainMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "kubetrio_drain_duration_seconds",
            "Time from the start of a node drain to its end, by outcome",
            ["result"],
            buckets=DRAIN_BUCKETS,
            registry=registry,
        )
        self.evictions = Counter(
            "kubetrio_drain_evictions_total",
            "Pod removals attempted by drains, by how each attempt ended",
            ["result"],
            registry=registry,
        )
        self.pod_seconds = Histogram(
            "kubetrio_drain_pod_seconds",
            "Per-pod drain phases: evict (until accepted), terminate (until gone), "
            "detach (volumes off the node), reattach (volumes on their new node)",
            ["phase"],
            buckets=POD_PHASE_BUCKETS,
            registry=registry,
        )
        for result in RESULTS:
            self.duration.labels(result)
        for result in EVICTION_RESULTS:
            self.evictions.labels(result)
        for phase in POD_PHASES:
            self.pod_seconds.labels(phase)


_providers: weakref.WeakKeyDictionary[CollectorRegistry, DrainMetrics] = weakref.WeakKeyDictionary()


def drain_metrics(registry: CollectorRegistry) -> DrainMetrics:
    provider = _providers.get(registry)
    if provider is None:
        provider = _providers[registry] = DrainMetrics(registry)
    return provider
