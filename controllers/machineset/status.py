"""A MachineSet's status as MCM computes it, and its write through the status subresource.

Counts: ``replicas`` every machine the set owns (terminating ones too), ``fullyLabeledReplicas``
those carrying all template labels, ``readyReplicas`` the Running ones, ``availableReplicas``
the Available or Running ones — with ``minReadySeconds`` set, only Running machines whose node
has been Ready that long. ``failedMachines`` summarises machines whose last operation failed; a
``ReplicaFailure`` condition carries the last create/delete error until a pass succeeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from kubetrio.api.machine import (
    PHASE_AVAILABLE,
    PHASE_FAILED,
    PHASE_RUNNING,
    PRESERVE_ANNOTATION,
    PRESERVE_AUTO_PRESERVED,
    STATE_FAILED,
    Machine,
)
from kubetrio.api.machineset import MACHINE_SET_REPLICA_FAILURE, MachineSet, MachineSetCondition
from kubetrio.api.meta import format_time, parse_time


def ready_since(machine: Machine) -> datetime | None:
    """When the machine's node last turned Ready (the status's last change as a fallback)."""
    condition = machine.condition("Ready")
    if condition is not None and condition.status == "True":
        return parse_time(condition.last_transition_time) or parse_time(
            machine.status.current_status.last_update_time
        )
    return parse_time(machine.status.current_status.last_update_time)


def is_ready(machine: Machine) -> bool:
    return machine.phase == PHASE_RUNNING


def available_in(machine: Machine, min_ready_seconds: int, now: datetime) -> float | None:
    """Seconds until the machine counts as available: 0 when it is, None if it never will
    without changing (not Running)."""
    if min_ready_seconds <= 0:
        return 0.0 if machine.phase in (PHASE_AVAILABLE, PHASE_RUNNING) else None
    if not is_ready(machine):
        return None
    since = ready_since(machine)
    if since is None:
        return 0.0
    return max(0.0, min_ready_seconds - (now - since).total_seconds())


def summary(machine: Machine) -> dict[str, Any]:
    ref = machine.metadata.controller_ref()
    return {
        "name": machine.name,
        "providerID": machine.spec.provider_id or None,
        "lastOperation": msgspec.to_builtins(machine.status.last_operation),
        "ownerRef": ref.name if ref is not None else None,
    }


def compute_status(
    ms: MachineSet, machines: Sequence[Machine], manage_error: str | None, now: datetime
) -> tuple[dict[str, Any], float | None]:
    """The status to write (wire names; zero counts left out, as MCM's omitempty) and the
    seconds until a machine that is ready but not yet available becomes available."""
    template_labels = ms.spec.template.metadata.labels
    fully_labeled = ready = available = preserved_failed = auto_preserved = 0
    next_available: float | None = None
    failed: list[dict[str, Any]] = []
    for machine in machines:
        labels = machine.metadata.labels
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_ready(machine):
            ready += 1
        wait = available_in(machine, ms.spec.min_ready_seconds, now)
        if wait == 0:
            available += 1
        elif wait is not None:
            next_available = wait if next_available is None else min(next_available, wait)
        if machine.phase == PHASE_FAILED and machine.status.current_status.preserve_expiry_time:
            # Kept on purpose: not a failure the deployment's availability should report.
            preserved_failed += 1
        elif machine.status.last_operation.state == STATE_FAILED:
            failed.append(summary(machine))
        if machine.metadata.annotations.get(PRESERVE_ANNOTATION) == PRESERVE_AUTO_PRESERVED:
            auto_preserved += 1

    conditions = list(ms.status.conditions)
    failure = ms.condition(MACHINE_SET_REPLICA_FAILURE)
    if manage_error is not None and failure is None:
        diff = len(machines) - ms.spec.replicas
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append(
            MachineSetCondition(
                type=MACHINE_SET_REPLICA_FAILURE,
                status="True",
                last_transition_time=format_time(now),
                reason=reason,
                message=manage_error,
            )
        )
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.type != MACHINE_SET_REPLICA_FAILURE]

    status = {
        "replicas": len(machines) or None,
        "fullyLabeledReplicas": fully_labeled or None,
        "readyReplicas": ready or None,
        "availableReplicas": available or None,
        "preservedFailedReplicas": preserved_failed or None,
        "autoPreserveFailedMachineCount": auto_preserved or None,
        "machineSetCondition": [msgspec.to_builtins(c) for c in conditions] or None,
        "failedMachines": failed or None,
    }
    return status, next_available


def _current(ms: MachineSet) -> dict[str, Any]:
    s = ms.status
    return {
        "replicas": s.replicas or None,
        "fullyLabeledReplicas": s.fully_labeled_replicas or None,
        "readyReplicas": s.ready_replicas or None,
        "availableReplicas": s.available_replicas or None,
        "preservedFailedReplicas": s.preserved_failed_replicas or None,
        "autoPreserveFailedMachineCount": s.auto_preserve_failed_machine_count or None,
        "machineSetCondition": [msgspec.to_builtins(c) for c in s.conditions] or None,
        "failedMachines": [msgspec.to_builtins(m) for m in s.failed_machines or ()] or None,
    }


def _normalised(status: dict[str, Any]) -> Any:
    """Round-trip through the typed view, so absent and empty fields compare alike."""
    failed = status.get("failedMachines") or []
    return (
        {k: v for k, v in status.items() if k != "failedMachines"},
        [{k: v for k, v in m.items() if v is not None} for m in failed],
    )


def status_patch(ms: MachineSet, status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """The merge patch for the status subresource, or None when nothing would change (MCM's
    steady state: no write while the counts, conditions, failures and generation hold)."""
    if (
        _normalised(_current(ms)) == _normalised(status)
        and ms.status.observed_generation == ms.metadata.generation
    ):
        return None
    body = dict(status)
    body["observedGeneration"] = ms.metadata.generation
    body["lastOperation"] = {"lastUpdateTime": format_time(now)}
    # Conditional on what was read: the conditions list is written whole, and the safety
    # controller's Frozen condition written meanwhile must not be erased (nor a removed one
    # brought back) by a pass that started from an older copy.
    return {"metadata": {"resourceVersion": ms.metadata.resource_version}, "status": body}
