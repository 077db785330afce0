"""A failure while collecting the machine gauges is counted in ``mcm_misc_scrape_failure_total``
(MCM's kind ``Machine-count``) and never fails the rest of the scrape."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, generate_latest

from kubetrio.controllers.machine.metrics import MachineMetrics
from kubetrio.controllers.machine.provider_metrics import BINARY


class BrokenLister:
    def list(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("cache torn down")


def test_collect_failure_is_counted_and_the_scrape_goes_on() -> None:
    registry = CollectorRegistry()
    MachineMetrics(registry, BrokenLister())  # type: ignore[arg-type]
    Counter("other_total", "something else", registry=registry).inc()
    labels = {"binary": BINARY, "kind": "Machine-count"}
    assert registry.get_sample_value("mcm_misc_scrape_failure_total", labels) == 0
    text = generate_latest(registry).decode()
    assert "other_total 1.0" in text
    assert "mcm_machine_items_total" not in text
    assert registry.get_sample_value("mcm_misc_scrape_failure_total", labels) >= 1
