"""The machine controller's freeze: while set, machines that are not being deleted are left
alone, so nothing is marked Failed on the strength of a view an outage made stale."""

from __future__ import annotations

from collections.abc import Iterator

import trio
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class ControllerFreeze:
    """One flag per manager, set and cleared by the API-server watchdog only; readers see it
    change through ``wait``, never by polling."""

    def __init__(self) -> None:
        self._frozen = False
        self._changed = trio.Event()

    @property
    def frozen(self) -> bool:
        return self._frozen

    def set(self, frozen: bool) -> None:
        if frozen == self._frozen:
            return
        self._frozen = frozen
        changed, self._changed = self._changed, trio.Event()
        changed.set()

    async def wait(self, frozen: bool) -> None:
        """Until the flag is ``frozen``."""
        while self._frozen != frozen:
            await self._changed.wait()


class FrozenCollector(Collector):
    """MCM's ``mcm_machine_controller_frozen``: 1 while frozen, read at scrape time."""

    def __init__(self, freeze: ControllerFreeze) -> None:
        self.freeze = freeze

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(
            "mcm_machine_controller_frozen", "Frozen status of the machine controller manager."
        )
        gauge.add_metric([], 1.0 if self.freeze.frozen else 0.0)
        yield gauge


def register_frozen_metric(registry: CollectorRegistry, freeze: ControllerFreeze) -> None:
    registry.register(FrozenCollector(freeze))
