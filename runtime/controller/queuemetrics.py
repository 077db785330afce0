"""Work queue metrics under client-go / controller-runtime names.

Dashboards and alerts written for Go controllers read ``workqueue_*`` with labels ``name`` and
``controller``; we export the same families so they work unchanged. Metrics go into a registry
the caller chooses (each manager has its own), never implicitly into the global one.

Counters and histograms are updated as things happen, lock-free (``runtime/metrics/families.py``:
queues live on the trio thread). The three gauges (depth, unfinished work,
longest running processor) are computed when the registry is collected, from the queues
themselves, so they are exact at scrape time and cost nothing on the queue's hot path.
Collection may run in a thread other than trio's: it only reads snapshots (``dict.copy``,
``list.copy`` are atomic under the GIL).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.runtime.metrics.families import LoopCounter, LoopHistogram

if TYPE_CHECKING:
    from kubetrio.runtime.controller.queue import WorkQueue

K = TypeVar("K", bound=Hashable)

# controller-runtime's buckets: 10 ns … 1000 s, factor 10 (ExponentialBuckets(10e-9, 10, 12)).
QUEUE_LATENCY_BUCKETS: tuple[float, ...] = tuple(1e-8 * 10**i for i in range(12))

LABELS = ("name", "controller")


class QueueMetrics:
    """One queue's series, label values bound once; the queue updates them directly (it keeps
    each key's first add time with the key, for ``queue_duration``)."""

    def __init__(self, provider: WorkqueueMetricsProvider, name: str, controller: str) -> None:
        self.adds = provider.adds.labels(name, controller)
        self.retries = provider.retries.labels(name, controller)
        self.queue_duration = provider.queue_duration.labels(name, controller)
        self.work_duration = provider.work_duration.labels(name, controller)


class WorkqueueMetricsProvider(Collector):
    """The ``workqueue_*`` families of one registry, shared by every named queue in it."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.adds = LoopCounter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            LABELS,
            registry=registry,
        )
        self.retries = LoopCounter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            LABELS,
            registry=registry,
        )
        self.queue_duration = LoopHistogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            LABELS,
            buckets=QUEUE_LATENCY_BUCKETS,
            registry=registry,
        )
        self.work_duration = LoopHistogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            LABELS,
            buckets=QUEUE_LATENCY_BUCKETS,
            registry=registry,
        )
        self._queues: weakref.WeakKeyDictionary[WorkQueue[object], tuple[str, str]] = (
            weakref.WeakKeyDictionary()
        )
        registry.register(self)

    def register(self, queue: WorkQueue[K], name: str, controller: str) -> QueueMetrics:
        """Start reporting ``queue`` under ``name``; names must be unique per registry."""
        if any(labels[0] == name for labels in list(self._queues.values())):
            raise ValueError(f"a work queue named {name!r} already reports to this registry")
        self._queues[queue] = (name, controller)  # type: ignore[index]
        return QueueMetrics(self, name, controller)

    def describe(self) -> Iterable[Metric]:
        return self._gauge_families()

    def collect(self) -> Iterable[Metric]:
        depth, unfinished, longest = self._gauge_families()
        for queue, (name, controller) in list(self._queues.items()):
            depth.add_metric([name, controller], len(queue))
            now = queue.current_time()
            ages = [now - started for started in queue.processing_started()]
            unfinished.add_metric([name, controller], sum(ages))
            longest.add_metric([name, controller], max(ages, default=0.0))
        return depth, unfinished, longest

    @staticmethod
    def _gauge_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=list(LABELS)),
            GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads. One can deduce "
                "the number of stuck threads by observing the rate at which this increases.",
                labels=list(LABELS),
            ),
            GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                labels=list(LABELS),
            ),
        )


_providers: weakref.WeakKeyDictionary[CollectorRegistry, WorkqueueMetricsProvider] = (
    weakref.WeakKeyDictionary()
)


def workqueue_metrics(registry: CollectorRegistry) -> WorkqueueMetricsProvider:
    """The provider for ``registry``, created on first use (families register only once)."""
    provider = _providers.get(registry)
    if provider is None:
        provider = _providers[registry] = WorkqueueMetricsProvider(registry)
    return provider
