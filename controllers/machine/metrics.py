"""Machine metrics under MCM's names (so its dashboards and alerts work), plus kubetrio's
lifecycle durations.

The per-machine gauges are computed from the informer cache when Prometheus scrapes: exact at
every scrape, nothing to keep in step on the hot path, and a deleted machine's series simply
stop. No label carries user data or secrets.

A scrape renders three series or more per machine, so its cost grows with the pool
(``tests/bench/scale.py`` measures it; ``docs/performance.md``). For pools of thousands,
``--metrics-per-machine=false`` (``machine.metricsPerMachine: false`` in the config file) drops
the per-machine families and keeps the count, so a scrape's cost no longer depends on the
pool's size::

    kubetrio run --metrics-per-machine=false   # mcm_machine_items_total only
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import (
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_IN_PLACE_UPDATE_FAILED,
    PHASE_IN_PLACE_UPDATE_SUCCESSFUL,
    PHASE_IN_PLACE_UPDATING,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_TERMINATING,
    PHASE_UNKNOWN,
    Machine,
    MachineClass,
)
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.driver import (
    CreateResult,
    Driver,
    SecretData,
    StatusResult,
)
from kubetrio.controllers.machine.provider_metrics import provider_metrics
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.metrics.prerendered import PrerenderedGauge, sample_line
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

# MCM's encoding of phases and condition statuses as gauge values.
PHASE_VALUES = {
    PHASE_TERMINATING: -4,
    PHASE_FAILED: -3,
    PHASE_CRASH_LOOP_BACK_OFF: -2,
    PHASE_UNKNOWN: -1,
    PHASE_PENDING: 0,
    PHASE_RUNNING: 1,
}
CONDITION_VALUES = {"True": 1, "False": 0, "Unknown": 2}
LIFECYCLE_BUCKETS = (1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
DRIVER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# Answers, not failures: "no VM yet" before a create, "nothing to initialise", "already gone".
EXPECTED_ANSWERS = frozenset({Code.NotFound, Code.Unimplemented})
DRIVER_OPERATIONS = (
    "CreateMachine",
    "InitializeMachine",
    "DeleteMachine",
    "GetMachineStatus",
    "ListMachines",
    "GetVolumeIDs",
)


PHASE = "mcm_machine_current_status_phase"
# MCM has no gauge value for the in-place phases (its phase gauge reads 0, as for Pending):
# machines in them get a series of their own, few at a time, so it is kept when
# ``metricsPerMachine`` is off.
IN_PLACE = "kubetrio_machine_in_place_update_phase_since_seconds"
# A preserved machine's preserveExpiryTime: few machines, kept without metricsPerMachine too.
PRESERVE_EXPIRY = "kubetrio_machine_preserve_expiry_time_seconds"
IN_PLACE_PHASES = frozenset(
    {PHASE_IN_PLACE_UPDATING, PHASE_IN_PLACE_UPDATE_SUCCESSFUL, PHASE_IN_PLACE_UPDATE_FAILED}
)
INFO = "mcm_machine_info"
CONDITION = "mcm_machine_status_condition"
INFO_LABELS = (
    "name",
    "namespace",
    "createdAt",
    "spec_provider_id",
    "spec_class_api_group",
    "spec_class_kind",
    "spec_class_name",
    "node_name",
)
Values = list[tuple[dict[str, str], float]]
# A machine's series as rendered for one scrape and kept for the next: the machine (the
# cache's object for that version), then per family (phase, info, conditions) its text and
# the (labels, value) pairs behind it.
_Rendered = tuple[Machine, tuple[str, Values], tuple[str, Values], tuple[str, Values]]


def _rendered(family: str, series: Values) -> tuple[str, Values]:
    return "".join(sample_line(family, labels, value) for labels, value in series), series


def _render(machine: Machine) -> _Rendered:
    name, namespace = machine.name, machine.namespace
    value = PHASE_VALUES.get(machine.phase)
    phase: Values = [] if value is None else [({"name": name, "namespace": namespace}, value)]
    info = (
        name,
        namespace,
        machine.metadata.creation_timestamp or "",
        machine.spec.provider_id,
        machine.spec.class_.api_group,
        machine.spec.class_.kind,
        machine.spec.class_.name,
        machine.metadata.labels.get("node", ""),
    )
    conditions: Values = [
        ({"name": name, "namespace": namespace, "condition": c.type}, CONDITION_VALUES[c.status])
        for c in machine.status.conditions
        if c.status in CONDITION_VALUES
    ]
    return (
        machine,
        _rendered(PHASE, phase),
        _rendered(INFO, [(dict(zip(INFO_LABELS, info, strict=True)), 1)]),
        _rendered(CONDITION, conditions),
    )


class MachineCollector(Collector):
    """``mcm_machine_*`` gauges from the machine cache, at scrape time."""

    def __init__(
        self,
        machines: Lister[Machine],
        on_failure: Callable[[], None] = lambda: None,
        per_machine: bool = True,
    ) -> None:
        self.machines = machines
        self.on_failure = on_failure
        self.per_machine = per_machine
        # Each machine's rendered series, kept while the cache holds the same object (a new
        # version is a new object), so a scrape re-renders only what changed.
        self._kept: dict[tuple[str, str], _Rendered] = {}

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._collect()
        except Exception:
            # As MCM: counted (mcm_misc_scrape_failure_total), and the rest of the scrape
            # is still served instead of failing whole.
            log.exception("collecting machine metrics failed")
            self.on_failure()

    def _collect(self) -> Iterator[Metric]:
        machines = self.machines.list()  # a snapshot: safe from the scrape thread
        items = GaugeMetricFamily("mcm_machine_items_total", "Count of machines")
        items.add_metric([], len(machines))
        in_place = GaugeMetricFamily(
            IN_PLACE,
            "When the machine entered its in-place update phase (InPlaceUpdating, "
            "InPlaceUpdateSuccessful, InPlaceUpdateFailed), as a Unix time",
            labels=["namespace", "name", "phase"],
        )
        preserve = GaugeMetricFamily(
            PRESERVE_EXPIRY,
            "When the preserved machine's preservation ends (status.currentStatus."
            "preserveExpiryTime), as a Unix time",
            labels=["namespace", "name", "phase"],
        )
        for machine in machines:
            until = parse_time(machine.status.current_status.preserve_expiry_time)
            if until is not None:
                preserve.add_metric(
                    [machine.namespace, machine.name, machine.phase], until.timestamp()
                )
            if machine.phase in IN_PLACE_PHASES:
                since = parse_time(machine.status.current_status.last_update_time)
                if since is not None:
                    in_place.add_metric(
                        [machine.namespace, machine.name, machine.phase], since.timestamp()
                    )
        if not self.per_machine:
            yield from (items, in_place, preserve)
            return
        phase = PrerenderedGauge(
            PHASE,
            "Current phase of the machine "
            "(Terminating -4, Failed -3, CrashLoopBackOff -2, Unknown -1, Pending 0, Running 1)",
            ["name", "namespace"],
        )
        info = PrerenderedGauge(INFO, "Information of the machine", INFO_LABELS)
        conditions = PrerenderedGauge(
            CONDITION,
            "Node conditions on the machine (True 1, False 0, Unknown 2)",
            ["name", "namespace", "condition"],
        )
        kept: dict[tuple[str, str], _Rendered] = {}
        for machine in machines:
            key = (machine.namespace, machine.name)
            entry = self._kept.get(key)
            if entry is None or entry[0] is not machine:  # a new version: render it again
                entry = _render(machine)
            kept[key] = entry
        self._kept = kept  # machines gone since the last scrape drop out
        entries = list(kept.values())
        phase.chunks, phase.values = [e[1][0] for e in entries], [e[1][1] for e in entries]
        info.chunks, info.values = [e[2][0] for e in entries], [e[2][1] for e in entries]
        conditions.chunks = [e[3][0] for e in entries]
        conditions.values = [e[3][1] for e in entries]
        yield from (items, in_place, preserve, phase, info, conditions)


class MachineMetrics:
    def __init__(
        self, registry: CollectorRegistry, machines: Lister[Machine], per_machine: bool = True
    ) -> None:
        scrape_failed = provider_metrics(registry).scrape_failed
        registry.register(MachineCollector(machines, scrape_failed, per_machine))
        self.driver_seconds = Histogram(
            "mcm_cloud_api_driver_request_duration_seconds",
            "Time taken by driver calls to the cloud provider",
            ["provider", "operation"],
            buckets=DRIVER_BUCKETS,
            registry=registry,
        )
        self.driver_failures = Counter(
            "mcm_cloud_api_driver_requests_failed_total",
            "Driver calls to the cloud provider that failed, by MCM error code",
            ["provider", "operation", "error_code"],
            registry=registry,
        )
        self.create = self._lifecycle("create", "machine created until its VM exists", registry)
        self.join = self._lifecycle("join", "machine created until it first ran", registry)
        self.drain = self._lifecycle("drain", "one drain of a deleting machine's node", registry)
        self.delete = self._lifecycle(
            "delete", "deletion requested until the finalizer is gone", registry
        )
        self.orphans_deleted = Counter(
            "kubetrio_machine_orphan_vms_deleted_total",
            "VMs without a Machine that the safety sweep deleted",
            registry=registry,
        )

    @staticmethod
    def _lifecycle(name: str, what: str, registry: CollectorRegistry) -> Histogram:
        return Histogram(
            f"kubetrio_machine_{name}_duration_seconds",
            f"Seconds from {what}",
            buckets=LIFECYCLE_BUCKETS,
            registry=registry,
        )


class InstrumentedDriver:
    """A driver whose every call is timed and whose failures are counted by code."""

    def __init__(self, driver: Driver, provider: str, metrics: MachineMetrics) -> None:
        self.driver = driver
        self.provider = provider
        self.metrics = metrics
        for operation in DRIVER_OPERATIONS:
            metrics.driver_seconds.labels(provider, operation)

    async def _timed(self, operation: str, call: Callable[[], Awaitable[Any]]) -> Any:
        started = time.perf_counter()
        try:
            return await call()
        except MachineError as error:
            if error.code not in EXPECTED_ANSWERS:
                self.metrics.driver_failures.labels(self.provider, operation, error.code.name).inc()
            raise
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.driver_seconds.labels(self.provider, operation).observe(elapsed)

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        result: CreateResult = await self._timed(
            "CreateMachine",
            partial(self.driver.create_machine, machine, machine_class, secret_data),
        )
        return result

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        result: StatusResult = await self._timed(
            "InitializeMachine",
            partial(self.driver.initialize_machine, machine, machine_class, secret_data),
        )
        return result

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        result: str = await self._timed(
            "DeleteMachine",
            partial(self.driver.delete_machine, machine, machine_class, secret_data),
        )
        return result

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        result: StatusResult = await self._timed(
            "GetMachineStatus",
            partial(self.driver.get_machine_status, machine, machine_class, secret_data),
        )
        return result

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        result: dict[str, str] = await self._timed(
            "ListMachines", partial(self.driver.list_machines, machine_class, secret_data)
        )
        return result

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        result: dict[str, str] = await self._timed(
            "GetVolumeIDs", partial(self.driver.get_volume_ids, pvs)
        )
        return result
