"""Lock-free series expose exactly what prometheus_client's own metrics expose for the same work."""

from __future__ import annotations

import re
from collections.abc import Iterator

import prometheus_client.metrics
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import disable_created_metrics, enable_created_metrics
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.runtime.metrics.families import LoopCounter, LoopGauge, LoopHistogram

BUCKETS = (0.005, 0.01, 0.1, 1.0, 10.0)
# Exact bounds, values between them, below the first, above the last, and zero.
OBSERVATIONS = (0.0, 0.005, 0.0050001, 0.01, 0.05, 0.1, 1.0, 3.0, 10.0, 10.5, 1e9)


def fill(registry: CollectorRegistry, counter: type, gauge: type, histogram: type) -> None:
    """The same work on either implementation (their constructors and methods agree)."""
    c = counter("jobs_total", "Jobs done", ["queue", "result"], registry=registry)
    g = gauge("workers_active", "Busy workers", ["queue"], registry=registry)
    h = histogram("job_seconds", "Job time", ["queue"], buckets=BUCKETS, registry=registry)
    c.labels("a", "ok").inc()
    c.labels("a", "ok").inc(2.5)
    c.labels("b", "error").inc(0)
    g.labels("a").inc()
    g.labels("a").inc()
    g.labels("a").dec()
    g.labels("b").set(7)
    for value in OBSERVATIONS:
        h.labels("a").observe(value)
    h.labels("b")  # a series created without observations exports zeros


@pytest.fixture
def without_created() -> Iterator[None]:
    disable_created_metrics()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        enable_created_metrics()  # type: ignore[no-untyped-call]


@pytest.fixture
def with_created() -> Iterator[None]:
    """The ``*_created`` series on, whatever an earlier test in this process left (a Manager
    turns them off for the whole process, as Go's client has none); the old state restored."""
    was = prometheus_client.metrics._use_created
    enable_created_metrics()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if not was:
            disable_created_metrics()  # type: ignore[no-untyped-call]


def exposition(counter: type, gauge: type, histogram: type) -> str:
    registry = CollectorRegistry()
    fill(registry, counter, gauge, histogram)
    return generate_latest(registry).decode()


def test_exposition_is_byte_identical_without_created_series(without_created: None) -> None:
    ours = exposition(LoopCounter, LoopGauge, LoopHistogram)
    theirs = exposition(Counter, Gauge, Histogram)
    assert ours == theirs
    assert "_created" not in ours


def test_exposition_matches_with_created_series(with_created: None) -> None:
    def mask(text: str) -> str:  # creation times differ by microseconds; their presence must not
        return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", text)

    ours = exposition(LoopCounter, LoopGauge, LoopHistogram)
    theirs = exposition(Counter, Gauge, Histogram)
    assert mask(ours) == mask(theirs)
    assert 'jobs_created{queue="a",result="ok"}' in ours
    assert 'job_seconds_created{queue="b"}' in ours


def test_bucket_boundaries_follow_le() -> None:
    registry = CollectorRegistry()
    h = LoopHistogram("t_seconds", "t", ["x"], buckets=BUCKETS, registry=registry)
    for value in OBSERVATIONS:
        h.labels("1").observe(value)
    samples = {
        (s.name, s.labels.get("le")): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    # An observation equal to a bound is in that bound's bucket (less than or equal).
    assert samples[("t_seconds_bucket", "0.005")] == 2  # 0.0, 0.005
    assert samples[("t_seconds_bucket", "0.01")] == 4  # + 0.0050001, 0.01
    assert samples[("t_seconds_bucket", "0.1")] == 6  # + 0.05, 0.1
    assert samples[("t_seconds_bucket", "1.0")] == 7
    assert samples[("t_seconds_bucket", "10.0")] == 9
    assert samples[("t_seconds_bucket", "+Inf")] == len(OBSERVATIONS)
    assert samples[("t_seconds_count", None)] == len(OBSERVATIONS)
    assert samples[("t_seconds_sum", None)] == pytest.approx(sum(OBSERVATIONS))


def test_labels_are_checked_and_series_reused() -> None:
    registry = CollectorRegistry()
    c = LoopCounter("n_total", "n", ["a", "b"], registry=registry)
    assert c.labels("x", "y") is c.labels("x", "y")
    with pytest.raises(ValueError, match=r"n_total: expected labels \['a', 'b'\]"):
        c.labels("x")
    with pytest.raises(ValueError, match="non-negative"):
        c.labels("x", "y").inc(-1)
    with pytest.raises(ValueError, match="increasing"):
        LoopHistogram("h", "h", [], buckets=(1.0, 0.5), registry=None)


def test_names_collide_as_prometheus_clients_do() -> None:
    registry = CollectorRegistry()
    LoopCounter("n_total", "n", [], registry=registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Counter("n", "n", registry=registry)
