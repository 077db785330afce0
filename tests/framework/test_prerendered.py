"""Per-machine series served from lines kept per machine version: byte for byte what
prometheus_client renders (text format and OpenMetrics), re-rendered only for a new version,
and still ordinary samples for in-process readers."""

from __future__ import annotations

from typing import Any

import msgspec
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

from kubetrio.api.machine import Machine
from kubetrio.controllers.machine.metrics import MachineCollector
from kubetrio.runtime.metrics.prerendered import exposition


def machine(name: str, phase: str = "Running", provider_id: str = "sim://eu-1/vm") -> Machine:
    doc: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "labels": {"node": name}},
        "spec": {"class": {"kind": "MachineClass", "name": "c"}, "providerID": provider_id},
        "status": {
            "currentStatus": {"phase": phase},
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DiskPressure", "status": "Unknown"},
                {"type": "Odd", "status": "Maybe"},  # not a known status: no series
            ],
        },
    }
    return msgspec.convert(doc, Machine)


class Lister:
    def __init__(self, machines: list[Machine]) -> None:
        self.machines = machines

    def list(self) -> list[Machine]:
        return list(self.machines)


def registry_of(lister: Lister) -> tuple[CollectorRegistry, MachineCollector]:
    registry = CollectorRegistry()
    Counter("before", "a family before", ["x"], registry=registry).labels("1").inc()
    collector = MachineCollector(lister)  # type: ignore[arg-type]
    registry.register(collector)
    Histogram("after_seconds", "a family after", registry=registry).observe(0.3)
    return registry, collector


def test_the_bytes_are_prometheus_client_s_in_both_formats() -> None:
    lister = Lister(
        [
            machine("m-1"),
            machine("m-2", phase="Pending", provider_id='sim://odd"quote\\back\nline'),
            machine("m-3", phase="NotAPhase"),  # no phase series, the rest stays
        ]
    )
    registry, _ = registry_of(lister)
    for encoder in (generate_latest, openmetrics):
        assert exposition(registry, encoder) == encoder(registry)
    assert (
        registry.get_sample_value(
            "mcm_machine_current_status_phase", {"name": "m-2", "namespace": "default"}
        )
        == 0
    )
    body = exposition(registry, openmetrics)
    assert body.endswith(b"# EOF\n") and body.count(b"# EOF") == 1


def test_only_a_new_version_is_rendered_again() -> None:
    one, two = machine("m-1"), machine("m-2")
    lister = Lister([one, two])
    registry, collector = registry_of(lister)
    exposition(registry, generate_latest)
    kept = dict(collector._kept)

    lister.machines = [machine("m-1", phase="Failed"), two]  # m-1's new version
    body = exposition(registry, generate_latest).decode()
    assert collector._kept[("default", "m-2")] is kept[("default", "m-2")]
    assert collector._kept[("default", "m-1")] is not kept[("default", "m-1")]
    assert 'mcm_machine_current_status_phase{name="m-1",namespace="default"} -3.0' in body

    lister.machines = [two]  # m-1 gone: its series and its kept lines go
    body = exposition(registry, generate_latest).decode()
    assert 'name="m-1"' not in body and list(collector._kept) == [("default", "m-2")]
    assert exposition(registry, generate_latest) == generate_latest(registry)
