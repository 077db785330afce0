"""MCM's ``mcm_machine_set_*`` gauges, computed from the MachineSet cache at scrape time (so
they are exact at every scrape and a deleted set's series simply stop), and its counter of
Failed machines a set deleted to replace them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.api.machineset import (
    MachineDeploymentCondition,
    MachineSet,
    MachineSetCondition,
    MachineSummary,
)
from kubetrio.api.meta import parse_time
from kubetrio.runtime.cache.store import Lister

CONDITION_VALUES = {"True": 1, "False": 0, "Unknown": 2}


def add_conditions_and_failed(
    conditions: GaugeMetricFamily,
    failed: GaugeMetricFamily,
    labels: list[str],
    status_conditions: Iterable[MachineSetCondition | MachineDeploymentCondition],
    failed_machines: Iterable[MachineSummary],
) -> None:
    """The rows MachineSets and MachineDeployments share (MCM's set and deployment
    collectors export them alike): one per condition, one per failed machine summary."""
    for condition in status_conditions:
        value = CONDITION_VALUES.get(condition.status)
        if value is not None:
            conditions.add_metric([*labels, condition.type], value)
    for summary in failed_machines:
        operation = summary.last_operation
        failed.add_metric(
            [
                *labels,
                summary.name,
                summary.provider_id,
                summary.owner_ref,
                operation.state,
                operation.type,
            ],
            1,
        )


def created_at(timestamp: str | None) -> str:
    """MCM's ``createdAt`` label: Unix seconds (``metav1.Time.Unix()``; 0001-01-01 when unset,
    which no stored object has)."""
    parsed = parse_time(timestamp)
    return str(int(parsed.timestamp())) if parsed is not None else "-62135596800"


class MachineSetCollector(Collector):
    def __init__(self, sets: Lister[MachineSet]) -> None:
        self.sets = sets

    def collect(self) -> Iterator[Metric]:
        sets = self.sets.list()  # a snapshot: safe from the scrape thread
        key = ["name", "namespace"]
        items = GaugeMetricFamily(
            "mcm_machine_set_items_total", "Count of machinesets currently managed by the mcm."
        )
        items.add_metric([], len(sets))
        info = GaugeMetricFamily(
            "mcm_machine_set_info",
            "Information of the Machinesets currently managed by the mcm.",
            labels=[
                *key,
                "createdAt",
                "spec_machine_class_api_group",
                "spec_machine_class_kind",
                "spec_machine_class_name",
            ],
        )
        spec_replicas = GaugeMetricFamily(
            "mcm_machine_set_info_spec_replicas",
            "Count of the Machinesets Spec Replicas.",
            labels=key,
        )
        min_ready = GaugeMetricFamily(
            "mcm_machine_set_info_spec_min_ready_seconds",
            "Information of the Machinesets currently managed by the mcm.",
            labels=key,
        )
        conditions = GaugeMetricFamily(
            "mcm_machine_set_status_condition",
            "Information of the mcm managed Machinesets' status conditions.",
            labels=[*key, "condition"],
        )
        failed = GaugeMetricFamily(
            "mcm_machine_set_failed_machines",
            "Information of the mcm managed Machinesets' failed machines.",
            labels=[
                *key,
                "failed_machine_name",
                "failed_machine_provider_id",
                "failed_machine_owner_ref",
                "failed_machine_last_operation_state",
                "failed_machine_last_operation_machine_operation_type",
            ],
        )
        counts = {
            field: GaugeMetricFamily(
                f"mcm_machine_set_status_{name}",
                f"Information of the mcm managed Machinesets' status for {what}.",
                labels=key,
            )
            for field, name, what in (
                ("available_replicas", "available_replicas", "available replicas"),
                ("fully_labeled_replicas", "fully_labelled_replicas", "fully labelled replicas"),
                ("ready_replicas", "ready_replicas", "ready replicas"),
                ("replicas", "replicas", "replicas"),
            )
        }
        for ms in sets:
            labels = [ms.name, ms.namespace]
            cls = ms.spec.template.spec.class_
            info.add_metric(
                [
                    *labels,
                    created_at(ms.metadata.creation_timestamp),
                    cls.api_group,
                    cls.kind,
                    cls.name,
                ],
                1,
            )
            spec_replicas.add_metric(labels, ms.spec.replicas)
            min_ready.add_metric(labels, ms.spec.min_ready_seconds)
            add_conditions_and_failed(
                conditions, failed, labels, ms.status.conditions, ms.status.failed_machines or ()
            )
            for field, family in counts.items():
                family.add_metric(labels, getattr(ms.status, field))
        yield from (items, info, spec_replicas, min_ready, conditions, failed, *counts.values())


def machineset_metrics(registry: CollectorRegistry, sets: Lister[MachineSet]) -> Counter:
    """Registers the gauges; the counter of stale machines removed is returned."""
    registry.register(MachineSetCollector(sets))
    return Counter(
        "mcm_machine_stale_machines",
        "Total count of stale machines flagged for termination that turned stale due to long "
        "unhealthiness",
        registry=registry,
    )
