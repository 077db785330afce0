"""controller-runtime's ``controller_runtime_*`` families, so its dashboards work unchanged.

They are updated on every reconcile, from the trio thread only, so they are lock-free series
(``runtime/metrics/families.py``) collected at scrape time; the exposition is prometheus_client's.
"""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry

from kubetrio.runtime.metrics.families import LoopCounter, LoopGauge, LoopHistogram

# controller-runtime's 40 fixed buckets, 5 ms … 60 s.
RECONCILE_TIME_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)  # fmt: skip

RESULTS = ("success", "error", "requeue_after", "requeue", "terminal_error")


class ControllerMetrics:
    """controller-runtime's ``controller_runtime_*`` families (reconciles by result, errors,
    reconcile time, active and max workers), under its names so its dashboards read ours."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconcile_total = LoopCounter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.reconcile_errors = LoopCounter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.terminal_errors = LoopCounter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.panics = LoopCounter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            ["controller"],
            registry=registry,
        )
        self.reconcile_time = LoopHistogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.active_workers = LoopGauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=registry,
        )
        self.max_concurrent = LoopGauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=registry,
        )

    def bind(self, controller: str, workers: int) -> BoundControllerMetrics:
        """One controller's series, all created at once (at 0), as controller-runtime does,
        so rates and alerts work before the first error ever happens."""
        return BoundControllerMetrics(self, controller, workers)


class BoundControllerMetrics:
    """A controller's series with label values bound once, off the per-reconcile path."""

    def __init__(self, metrics: ControllerMetrics, controller: str, workers: int) -> None:
        self.totals = {
            result: metrics.reconcile_total.labels(controller, result) for result in RESULTS
        }
        self.errors = metrics.reconcile_errors.labels(controller)
        self.terminal_errors = metrics.terminal_errors.labels(controller)
        self.panics = metrics.panics.labels(controller)
        self.reconcile_time = metrics.reconcile_time.labels(controller)
        self.active_workers = metrics.active_workers.labels(controller)
        self.active_workers.set(0)
        metrics.max_concurrent.labels(controller).set(workers)

    def finished(self, outcome: str, seconds: float) -> None:
        self.reconcile_time.observe(seconds)
        self.totals[outcome].value += 1
        if outcome in ("error", "terminal_error"):
            self.errors.value += 1
            if outcome == "terminal_error":
                self.terminal_errors.value += 1


_providers: weakref.WeakKeyDictionary[CollectorRegistry, ControllerMetrics] = (
    weakref.WeakKeyDictionary()
)


def controller_metrics(registry: CollectorRegistry) -> ControllerMetrics:
    provider = _providers.get(registry)
    if provider is None:
        provider = _providers[registry] = ControllerMetrics(registry)
    return provider
