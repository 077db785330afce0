"""MCM's provider metrics (``pkg/util/provider/metrics``) besides the per-machine gauges: the
cloud API requests a driver makes, and failures of the metrics collection itself.

Names, labels and buckets are MCM's, so its dashboards and alerts work unchanged. A driver
records each request it sends to its cloud with ``request(provider, service)``: what it counts
is the provider's API (one driver call may make several requests, or none), which is why the
drivers record it and not the controller around its driver calls.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Histogram

# Go client's prometheus.DefBuckets: MCM declares the histogram without buckets of its own.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# MCM's constant label on the scrape failure counter.
BINARY = "machine-controller-manager-provider"
MACHINE_COUNT = "Machine-count"  # MCM's kind for failures collecting the machine metrics


class ProviderMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "mcm_cloud_api_requests_total",
            "Number of Cloud Service API requests, partitioned by provider, and service.",
            ["provider", "service"],
            registry=registry,
        )
        self.failed = Counter(
            "mcm_cloud_api_requests_failed_total",
            "Number of Failed Cloud Service API requests, partitioned by provider, and service.",
            ["provider", "service"],
            registry=registry,
        )
        self.duration = Histogram(
            "mcm_cloud_api_api_request_duration_seconds",
            "Time(in seconds) it takes for a provider API request to complete",
            ["provider", "service"],
            buckets=GO_DEFAULT_BUCKETS,
            registry=registry,
        )
        self._scrape_failures = Counter(
            "mcm_misc_scrape_failure_total",
            "Total count of scrape failures.",
            ["binary", "kind"],
            registry=registry,
        )
        self._scrape_failures.labels(BINARY, MACHINE_COUNT)  # 0 from the start, not absent

    @contextmanager
    def request(self, provider: str, service: str) -> Iterator[None]:
        """Around one request to the cloud: counted; timed when it succeeds (MCM times only
        successful requests), counted as failed when it raises."""
        self.requests.labels(provider, service).inc()
        started = time.perf_counter()
        try:
            yield
        except Exception:
            self.failed.labels(provider, service).inc()
            raise
        self.duration.labels(provider, service).observe(time.perf_counter() - started)

    def scrape_failed(self, kind: str = MACHINE_COUNT) -> None:
        self._scrape_failures.labels(BINARY, kind).inc()


_by_registry: WeakKeyDictionary[CollectorRegistry, ProviderMetrics] = WeakKeyDictionary()


def provider_metrics(registry: CollectorRegistry) -> ProviderMetrics:
    """The registry's provider metrics, made on first use: the controller and every driver
    of a manager share one set, as MCM's are process-wide."""
    metrics = _by_registry.get(registry)
    if metrics is None:
        metrics = _by_registry[registry] = ProviderMetrics(registry)
    return metrics
