"""MCM's ``mcm_machine_deployment_*`` gauges, computed from the MachineDeployment cache at
scrape time like the MachineSet ones: exact at every scrape, and a deleted deployment's series
simply stop (MCM's GaugeVecs keep them until the process restarts)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.api.machineset import MachineDeployment
from kubetrio.controllers.machineset.metrics import add_conditions_and_failed, created_at
from kubetrio.runtime.cache.store import Lister

KEY = ["name", "namespace"]
FAILED_LABELS = [
    *KEY,
    "failed_machine_name",
    "failed_machine_provider_id",
    "failed_machine_owner_ref",
    "failed_machine_last_operation_state",
    "failed_machine_last_operation_machine_operation_type",
]
# (status field, help) in MCM's wording; the field is the metric's suffix.
STATUS_COUNTS = (
    ("available_replicas", "Count of the mcm managed Machinedeployments available replicas."),
    ("unavailable_replicas", "Count of the mcm managed Machinedeployments unavailable replicas."),
    ("ready_replicas", "Count of the mcm managed Machinedeployments ready replicas."),
    ("updated_replicas", "Count of the mcm managed Machinedeployments updated replicas."),
    ("replicas", "Count of the mcm managed Machinedeployments replicas."),
)


def int_value(value: int | str | None) -> int:
    """Go's ``IntOrString.IntValue()``, which MCM reports: a percentage ("25%") is 0."""
    if isinstance(value, int):
        return value
    try:
        return int(value or "")
    except ValueError:
        return 0


class MachineDeploymentCollector(Collector):
    def __init__(self, deployments: Lister[MachineDeployment]) -> None:
        self.deployments = deployments

    def collect(self) -> Iterator[Metric]:
        deployments = self.deployments.list()  # a snapshot: safe from the scrape thread
        items = GaugeMetricFamily(
            "mcm_machine_deployment_items_total",
            "Count of machinedeployments currently managed by the mcm.",
        )
        items.add_metric([], len(deployments))
        info = GaugeMetricFamily(
            "mcm_machine_deployment_info",
            "Information of the Machinedeployments currently managed by the mcm.",
            labels=[*KEY, "createdAt", "spec_strategy_type"],
        )
        paused = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_paused",
            "Information of the Machinedeployments paused status.",
            labels=KEY,
        )
        spec_replicas = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_replicas",
            "Information of the Machinedeployments spec replicas.",
            labels=KEY,
        )
        min_ready = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_min_ready_seconds",
            "Information of the Machinedeployments spec min ready seconds.",
            labels=KEY,
        )
        max_surge = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_rolling_update_max_surge",
            "Information of the Machinedeployments spec rolling update max surge.",
            labels=KEY,
        )
        max_unavailable = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_rolling_update_max_unavailable",
            "Information of the Machinedeployments spec rolling update max unavailable.",
            labels=KEY,
        )
        history_limit = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_revision_history_limit",
            "Information of the Machinedeployments spec revision history limit.",
            labels=KEY,
        )
        deadline = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_progress_deadline_seconds",
            "Information of the Machinedeployments spec deadline seconds.",
            labels=KEY,
        )
        rollback = GaugeMetricFamily(
            "mcm_machine_deployment_info_spec_rollback_to_revision",
            "Information of the Machinedeployments spec rollback to revision.",
            labels=KEY,
        )
        conditions = GaugeMetricFamily(
            "mcm_machine_deployment_status_condition",
            "Information of the mcm managed Machinedeployments' status conditions.",
            labels=[*KEY, "condition"],
        )
        counts = {
            field: GaugeMetricFamily(f"mcm_machine_deployment_status_{field}", text, labels=KEY)
            for field, text in STATUS_COUNTS
        }
        collisions = GaugeMetricFamily(
            "mcm_machine_deployment_status_collision_count",
            "Mcm managed Machinedeployments collision count.",
            labels=KEY,
        )
        failed = GaugeMetricFamily(
            "mcm_machine_deployment_failed_machines",
            "Information of the mcm managed Machinedeployments' failed machines.",
            labels=FAILED_LABELS,
        )
        for md in deployments:
            labels = [md.name, md.namespace]
            spec, status = md.spec, md.status
            info.add_metric(
                [*labels, created_at(md.metadata.creation_timestamp), spec.strategy.type], 1
            )
            paused.add_metric(labels, 1 if spec.paused else 0)
            spec_replicas.add_metric(labels, spec.replicas)
            min_ready.add_metric(labels, spec.min_ready_seconds)
            # MCM reads the bounds only for RollingUpdate (a nil rollingUpdate would panic it;
            # here it reads as 0).
            if spec.strategy.type == "RollingUpdate":
                bounds = spec.strategy.rolling_update
                max_surge.add_metric(labels, int_value(bounds.max_surge if bounds else None))
                max_unavailable.add_metric(
                    labels, int_value(bounds.max_unavailable if bounds else None)
                )
            if spec.revision_history_limit is not None:
                history_limit.add_metric(labels, spec.revision_history_limit)
            if spec.progress_deadline_seconds is not None:
                deadline.add_metric(labels, spec.progress_deadline_seconds)
            if spec.rollback_to is not None:
                rollback.add_metric(labels, spec.rollback_to.revision)
            add_conditions_and_failed(
                conditions, failed, labels, status.conditions, status.failed_machines
            )
            for field, family in counts.items():
                family.add_metric(labels, getattr(status, field))
            if status.collision_count is not None:
                collisions.add_metric(labels, status.collision_count)
        yield from (
            items,
            info,
            paused,
            spec_replicas,
            min_ready,
            max_surge,
            max_unavailable,
            history_limit,
            deadline,
            rollback,
            conditions,
            *counts.values(),
            collisions,
            failed,
        )


def machinedeployment_metrics(
    registry: CollectorRegistry, deployments: Lister[MachineDeployment]
) -> None:
    registry.register(MachineDeploymentCollector(deployments))
