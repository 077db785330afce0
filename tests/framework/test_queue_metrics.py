"""Queue metrics: client-go names, a caller-chosen registry, gauges exact at scrape time."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.runtime.controller.queue import WorkQueue
from kubetrio.runtime.controller.queuemetrics import QUEUE_LATENCY_BUCKETS, workqueue_metrics

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(registry: CollectorRegistry) -> Samples:
    """Every sample of ``registry``, parsed back from the exposition text as Prometheus would."""
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    labels.setdefault("name", "q")
    labels.setdefault("controller", "q")
    return samples[(metric, tuple(sorted(labels.items())))]


async def test_counters_histograms_and_gauges(autojump_clock: trio.testing.MockClock) -> None:
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue(name="q", metrics=workqueue_metrics(registry))
    queue.add("a")
    queue.add("a")  # coalesced: not an add
    queue.add("b")
    queue.add_after("c", 0)  # counts as a retry, as in client-go
    queue.add_after("d", 30)
    samples = scrape(registry)
    assert value(samples, "workqueue_adds_total") == 3
    assert value(samples, "workqueue_retries_total") == 2
    assert value(samples, "workqueue_depth") == 3

    await trio.sleep(2)
    assert await queue.get() == "a"
    await trio.sleep(5)
    samples = scrape(registry)
    assert value(samples, "workqueue_unfinished_work_seconds") == 5
    assert value(samples, "workqueue_longest_running_processor_seconds") == 5
    assert value(samples, "workqueue_queue_duration_seconds_count") == 1
    assert value(samples, "workqueue_queue_duration_seconds_sum") == 2
    assert await queue.get() == "b"
    await trio.sleep(1)
    samples = scrape(registry)
    assert value(samples, "workqueue_unfinished_work_seconds") == 6 + 1
    assert value(samples, "workqueue_longest_running_processor_seconds") == 6
    queue.done("a")
    queue.done("b")
    samples = scrape(registry)
    assert value(samples, "workqueue_unfinished_work_seconds") == 0
    assert value(samples, "workqueue_work_duration_seconds_count") == 2
    assert value(samples, "workqueue_work_duration_seconds_sum") == 6 + 1
    assert value(samples, "workqueue_depth") == 1  # c

    await trio.sleep(60)  # d came due while no worker looked
    samples = scrape(registry)
    assert value(samples, "workqueue_depth") == 2
    assert await queue.get() == "c"
    assert await queue.get() == "d"
    samples = scrape(registry)
    # d's time in the queue counts from its ready time (t=30), not from when it was noticed.
    assert value(samples, "workqueue_queue_duration_seconds_sum") == 2 + 7 + 68 + (68 - 30)
    assert value(samples, "workqueue_adds_total") == 4


async def test_queues_share_families_by_label(autojump_clock: trio.testing.MockClock) -> None:
    registry = CollectorRegistry()
    provider = workqueue_metrics(registry)
    assert workqueue_metrics(registry) is provider
    one: WorkQueue[str] = WorkQueue(name="one", metrics=provider, controller="machine")
    two: WorkQueue[str] = WorkQueue(name="two", metrics=provider)
    one.add("x")
    two.add("x")
    two.add("y")
    samples = scrape(registry)
    assert value(samples, "workqueue_depth", name="one", controller="machine") == 1
    assert value(samples, "workqueue_depth", name="two", controller="two") == 2
    with pytest.raises(ValueError, match="already reports"):
        WorkQueue(name="one", metrics=provider)


async def test_unnamed_queue_has_no_metrics(autojump_clock: trio.testing.MockClock) -> None:
    registry = CollectorRegistry()
    with pytest.raises(ValueError, match="needs a name"):
        WorkQueue(metrics=workqueue_metrics(registry))
    WorkQueue[str]().add("a")
    assert "workqueue_adds_total{" not in generate_latest(registry).decode()


def test_registry_is_the_callers_and_buckets_are_controller_runtimes() -> None:
    from prometheus_client import REGISTRY

    registry = CollectorRegistry()
    workqueue_metrics(registry)
    names = {family.name for family in registry.collect()}
    assert {
        "workqueue_adds",
        "workqueue_retries",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_depth",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    } <= names
    assert not any(f.name.startswith("workqueue_") for f in REGISTRY.collect())
    assert QUEUE_LATENCY_BUCKETS[0] == pytest.approx(1e-8)
    assert QUEUE_LATENCY_BUCKETS[-1] == pytest.approx(1000)
    assert len(QUEUE_LATENCY_BUCKETS) == 12


async def test_scrape_from_another_thread_while_queue_is_busy(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = CollectorRegistry()
    queue: WorkQueue[int] = WorkQueue(name="q", metrics=workqueue_metrics(registry))
    scrapes = 0

    async def churn() -> None:
        for i in range(2000):
            queue.add(i)
            queue.add_after(i + 10_000, 0.001 * i)
            key = await queue.get()
            queue.done(key)

    def scrape_repeatedly() -> None:
        nonlocal scrapes
        for _ in range(50):
            scrape(registry)
            scrapes += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(churn)
        nursery.start_soon(trio.to_thread.run_sync, scrape_repeatedly)
    assert scrapes == 50


async def test_queue_duration_counts_from_the_first_add_since_the_key_was_handed_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # client-go's addTimes: a priority raise is not a new add; a re-add while the key is being
    # processed starts a new wait, which ends when the key is handed out again after ``done``.
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue(name="q", metrics=workqueue_metrics(registry))
    queue.add("a")
    await trio.sleep(1)
    queue.add("a", priority=5)
    await trio.sleep(1)
    assert await queue.get() == "a"  # waited 2 s
    await trio.sleep(1)
    queue.add("a")  # t=3, while processing
    await trio.sleep(2)
    queue.done("a")  # t=5: queued again
    await trio.sleep(1)
    assert await queue.get() == "a"  # t=6: waited 3 s since the re-add
    samples = scrape(registry)
    assert value(samples, "workqueue_queue_duration_seconds_count") == 2
    assert value(samples, "workqueue_queue_duration_seconds_sum") == 2 + 3
    assert value(samples, "workqueue_adds_total") == 2
