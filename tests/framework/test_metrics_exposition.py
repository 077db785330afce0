"""A running controller's ``/metrics``: the families prometheus_client used to expose, with counts
that match the work done (the series behind them are lock-free, ``runtime/metrics/families.py``)."""

from __future__ import annotations

from collections import Counter as Tally

import requests
import trio
import trio.testing
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result, TerminalError
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.kube import blocking

OBJECTS = 30
WORKERS = 3
QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)  # fmt: skip


def reference_families() -> dict[str, Metric]:
    """The families as prometheus_client's own metric classes exposed them (the definitions
    the controller used before its series became lock-free), one series each."""
    registry = CollectorRegistry()
    queue, ctl = ["name", "controller"], ["controller"]
    for name, doc in (
        ("workqueue_adds_total", "Total number of adds handled by workqueue"),
        ("workqueue_retries_total", "Total number of retries handled by workqueue"),
    ):
        Counter(name, doc, queue, registry=registry).labels("c", "c")
    for name, doc in (
        (
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
        ),
        (
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
        ),
    ):
        Histogram(name, doc, queue, buckets=QUEUE_BUCKETS, registry=registry).labels("c", "c")
    Counter(
        "controller_runtime_reconcile_total",
        "Total number of reconciliations per controller",
        ["controller", "result"],
        registry=registry,
    ).labels("c", "success")
    for name, doc in (
        ("reconcile_errors_total", "Total number of reconciliation errors per controller"),
        (
            "terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
        ),
        ("reconcile_panics_total", "Total number of reconciliation panics per controller"),
    ):
        Counter(f"controller_runtime_{name}", doc, ctl, registry=registry).labels("c")
    Histogram(
        "controller_runtime_reconcile_time_seconds",
        "Length of time per reconciliation per controller",
        ctl,
        buckets=RECONCILE_BUCKETS,
        registry=registry,
    ).labels("c")
    Gauge(
        "controller_runtime_active_workers",
        "Number of currently used workers per controller",
        ctl,
        registry=registry,
    ).labels("c")
    Gauge(
        "controller_runtime_max_concurrent_reconciles",
        "Maximum number of concurrent reconciles per controller",
        ctl,
        registry=registry,
    ).labels("c")
    text = generate_latest(registry).decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def shape(family: Metric) -> set[tuple[str, tuple[str, ...], str | None]]:
    """Sample names, label names and ``le`` values: what dashboards and queries depend on."""
    return {(s.name, tuple(sorted(s.labels)), s.labels.get("le")) for s in family.samples}


class Scripted:
    """Succeeds, except: ``terminal`` fails for good, ``flaky`` fails once (an API conflict),
    ``later`` asks to be looked at again in 30 s once."""

    def __init__(self) -> None:
        self.outcomes: Tally[str] = Tally()
        self.calls: Tally[str] = Tally()
        self.quiet = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        self.calls[key.name] += 1
        first = self.calls[key.name] == 1
        try:
            if key.name == "terminal":
                self.outcomes["terminal_error"] += 1
                raise TerminalError("never fits")
            if key.name == "flaky" and first:
                self.outcomes["error"] += 1
                raise ApiError(409, "Conflict", "the object has been modified")
            if key.name == "later" and first:
                self.outcomes["requeue_after"] += 1
                return Result(requeue_after=30)
            self.outcomes["success"] += 1
            return Result()
        finally:
            # Every object seen, flaky and later seen twice: nothing more will happen.
            if len(self.calls) == OBJECTS + 3 and self.calls["flaky"] == self.calls["later"] == 2:
                self.quiet.set()


async def test_scrape_has_the_same_families_and_counts_match_the_work(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for name in [f"cm-{i}" for i in range(OBJECTS)] + ["terminal", "flaky", "later"]:
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"},
            }
        )
    client = Client.from_url(emu.url, token=emu.token)
    manager = Manager(
        client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    scripted = Scripted()
    manager.controller("scripted").for_(ConfigMap, namespace="default").workers(WORKERS).complete(
        scripted
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        with trio.fail_after(120):
            await scripted.quiet.wait()
        port = manager.bound_ports["metrics"]
        response = await blocking(
            lambda: requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        )
        manager.stop()
    assert response.status_code == 200
    scraped = {family.name: family for family in text_string_to_metric_families(response.text)}

    for name, reference in reference_families().items():
        family = scraped[name]
        assert (family.type, family.documentation) == (reference.type, reference.documentation)
        assert shape(family) == shape(reference), name

    def value(sample: str, **labels: str) -> float:
        (found,) = [
            s.value
            for family in scraped.values()
            for s in family.samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        ]
        return found

    ctl = {"controller": "scripted"}
    queue = {"name": "scripted", **ctl}
    reconciles = sum(scripted.calls.values())
    assert reconciles == OBJECTS + 1 + 2 + 2
    for result in ("success", "error", "requeue_after", "terminal_error"):
        total = value("controller_runtime_reconcile_total", result=result, **ctl)
        assert total == scripted.outcomes[result], result
    assert value("controller_runtime_reconcile_total", result="requeue", **ctl) == 0
    assert value("controller_runtime_reconcile_errors_total", **ctl) == 2  # flaky + terminal
    assert value("controller_runtime_terminal_reconcile_errors_total", **ctl) == 1
    assert value("controller_runtime_reconcile_panics_total", **ctl) == 0  # an ApiError
    assert value("controller_runtime_reconcile_time_seconds_count", **ctl) == reconciles
    assert value("controller_runtime_reconcile_time_seconds_bucket", le="+Inf", **ctl) == (
        reconciles
    )
    assert value("controller_runtime_active_workers", **ctl) == 0
    assert value("controller_runtime_max_concurrent_reconciles", **ctl) == WORKERS
    assert value("workqueue_work_duration_seconds_count", **queue) == reconciles
    assert value("workqueue_queue_duration_seconds_count", **queue) == reconciles
    # The flaky retry (rate limited) and the requeue_after both go through add_after.
    assert value("workqueue_retries_total", **queue) == 2
    assert value("workqueue_adds_total", **queue) == reconciles
    # Time in the queue counts from a key's ready time, so "later"'s 30 s wait is not in it.
    assert value("workqueue_queue_duration_seconds_bucket", le="10.0", **queue) == reconciles
