"""Counters, gauges and histograms updated without a lock, exposed by prometheus_client.

Why: prometheus_client guards every ``inc`` and ``observe`` with a lock, because any thread may
update a metric. kubetrio's hot metrics (``workqueue_*``, ``controller_runtime_*``) are only ever
updated from the trio thread, several times per reconcile, so that lock was a large share of an
in-process reconcile's CPU (``tests/bench/metrics.py`` compares the two). Here a series is a plain
Python object: a counter is a float attribute, a histogram an array of per-bucket counts found by
bisection. Nothing is shared until a scrape, when a ``prometheus_client`` ``Collector`` turns
snapshots of them into the same families, names, labels, help texts, buckets and ``_created`` series
as prometheus_client's own ``Counter``, ``Gauge`` and ``Histogram`` would expose, so the exposition
does not change.

The rule that makes this safe: **update a series from one thread only** (for kubetrio, the trio
thread). Scrapes may run in any thread; they read copies (``list.copy``, ``dict.copy`` are
atomic under the GIL), so a scrape sees each series as it was at some instant, though a
histogram's ``_sum`` may be one observation ahead of or behind its buckets.

Example::

    from prometheus_client import CollectorRegistry, generate_latest
    from kubetrio.runtime.metrics.families import LoopCounter, LoopHistogram

    registry = CollectorRegistry()
    adds = LoopCounter("workqueue_adds_total", "Total number of adds handled by workqueue",
                       ("name", "controller"), registry=registry)
    adds.labels("machine", "machine").inc()
    work = LoopHistogram("workqueue_work_duration_seconds", "How long processing an item takes",
                         ("name", "controller"), buckets=(0.1, 1.0), registry=registry)
    work.labels("machine", "machine").observe(0.5)   # counted in le="1.0" and le="+Inf"
    print(generate_latest(registry).decode())
"""

from __future__ import annotations

import itertools
import math
import time
from abc import abstractmethod
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

import prometheus_client.metrics
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString


def _use_created() -> bool:
    # prometheus_client's own switch (``disable_created_metrics()``, or the environment variable
    # PROMETHEUS_DISABLE_CREATED_SERIES) decides for these series too, as it does for its own.
    return bool(getattr(prometheus_client.metrics, "_use_created", True))


class CounterSeries:
    """One labelled counter: ``inc`` only, from one thread."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("counters can only be incremented by non-negative amounts")
        self.value += amount


class GaugeSeries:
    """One labelled gauge, set or moved from one thread."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)


class HistogramSeries:
    """One labelled histogram: per-bucket counts (not cumulative) and a sum, from one thread.

    An observation lands in the first bucket whose upper bound is >= it: prometheus_client's
    ``le`` (less than or equal) rule, which ``bisect_left`` over the sorted bounds implements.
    """

    __slots__ = ("_bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds  # sorted, ending with +Inf
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self._bounds, amount)] += 1
        self.sum += amount


S = TypeVar("S", CounterSeries, GaugeSeries, HistogramSeries)


class _Family(Collector, Generic[S]):
    """A named family of series keyed by label values, registered as a scrape-time collector."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        registry: CollectorRegistry | None,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], S] = {}
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> S:
        """The series for these label values (created at zero on first use, then reused)."""
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self._labelnames):
                raise ValueError(
                    f"{self._name}: expected labels {list(self._labelnames)}, got {list(values)}"
                )
            series = self._series[values] = self._new_series()
        return series

    # What each kind of family (counter, gauge, histogram) defines.
    @abstractmethod
    def _new_series(self) -> S: ...

    @abstractmethod
    def _family(self) -> Metric: ...

    @abstractmethod
    def _add(self, family: Metric, values: tuple[str, ...], series: S) -> None: ...

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for values, series in self._series.copy().items():
            self._add(family, values, series)
        return [family]


class LoopCounter(_Family[CounterSeries]):
    """Exposed like ``prometheus_client.Counter``: ``<name>_total`` and ``<name>_created``."""

    def _new_series(self) -> CounterSeries:
        return CounterSeries()

    def _family(self) -> Metric:
        return CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def _add(self, family: Metric, values: tuple[str, ...], series: CounterSeries) -> None:
        assert isinstance(family, CounterMetricFamily)
        family.add_metric(values, series.value, created=series.created if _use_created() else None)


class LoopGauge(_Family[GaugeSeries]):
    """Exposed like ``prometheus_client.Gauge``."""

    def _new_series(self) -> GaugeSeries:
        return GaugeSeries()

    def _family(self) -> Metric:
        return GaugeMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def _add(self, family: Metric, values: tuple[str, ...], series: GaugeSeries) -> None:
        assert isinstance(family, GaugeMetricFamily)
        family.add_metric(values, series.value)


class LoopHistogram(_Family[HistogramSeries]):
    """Exposed like ``prometheus_client.Histogram``: ``_bucket`` (cumulative, ``le``),
    ``_count``, ``_sum`` and ``_created``; +Inf is appended to ``buckets`` as it does."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry | None,
    ) -> None:
        bounds = sorted(float(b) for b in buckets)
        if not bounds or bounds != [float(b) for b in buckets]:
            raise ValueError(f"{name}: buckets must be given in increasing order")
        if bounds[-1] != math.inf:
            bounds.append(math.inf)
        self._bounds = tuple(bounds)
        self._les = [floatToGoString(bound) for bound in bounds]  # type: ignore[no-untyped-call]
        super().__init__(name, documentation, labelnames, registry=registry)

    def _new_series(self) -> HistogramSeries:
        return HistogramSeries(self._bounds)

    def _family(self) -> Metric:
        return HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def _add(self, family: Metric, values: tuple[str, ...], series: HistogramSeries) -> None:
        assert isinstance(family, HistogramMetricFamily)
        cumulative = itertools.accumulate(series.counts.copy(), initial=0.0)
        next(cumulative)  # the initial 0.0: it only makes the running totals floats
        family.add_metric(values, list(zip(self._les, cumulative, strict=True)), series.sum)
        if _use_created():
            labels = dict(zip(self._labelnames, values, strict=True))
            family.samples.append(Sample(self._name + "_created", labels, series.created))
