"""A deployment's status and conditions (MCM's ``calculateDeploymentStatus``,
``syncRolloutStatus`` and the condition helpers): pure functions of the sets' numbers, the old
status and the time, on the wire's own shape (camelCase dicts) so the result is the patch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrio.api.meta import format_time, parse_time
from kubetrio.controllers.machinedeployment.sets import (
    SetState,
    total_actual,
    total_available,
    total_ready,
    total_replicas,
)

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"

# MCM's reasons, verbatim (dashboards and Gardener match them).
MACHINE_SET_UPDATED = "MachineSetUpdated"
FAILED_SET_CREATE = "MachineSetCreateError"
NEW_MACHINE_SET = "NewMachineSetCreated"
FOUND_NEW_SET = "FoundNewMachineSet"
NEW_SET_AVAILABLE = "NewMachineSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_UNAVAILABLE = "MinimumReplicasUnavailable"

Condition = dict[str, Any]


def new_condition(
    type_: str, status: str, reason: str, message: str, now: dt.datetime
) -> Condition:
    stamp = format_time(now)
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Condition | None:
    return next((dict(c) for c in conditions if c.get("type") == type_), None)


def set_condition(conditions: Sequence[Mapping[str, Any]], condition: Condition) -> list[Condition]:
    """Same status and reason: unchanged (its times kept, so a deadline keeps counting from
    the last real progress). Same status: the transition time is kept."""
    current = get_condition(conditions, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition["reason"]
    ):
        return [dict(c) for c in conditions]
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    return [*remove_condition(conditions, condition["type"]), condition]


def remove_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> list[Condition]:
    return [dict(c) for c in conditions if c.get("type") != type_]


@dataclass(frozen=True, slots=True)
class Spec:
    """What status computation reads of the deployment."""

    name: str
    replicas: int
    generation: int
    max_unavailable: int
    progress_deadline_seconds: int | None = None


def calculate_status(
    spec: Spec,
    all_sets: Sequence[SetState | None],
    new: SetState | None,
    old_status: Mapping[str, Any],
    failed_machines: Sequence[Mapping[str, Any]],
    now: dt.datetime,
) -> dict[str, Any]:
    """The counts, and Available: True while at least ``replicas - maxUnavailable`` machines
    are available, the preserved Failed ones not expected to be."""
    available = total_available(all_sets)
    total = total_replicas(all_sets)
    preserved_failed = sum(s.preserved_failed for s in all_sets if s is not None)
    status: dict[str, Any] = {
        "observedGeneration": spec.generation,
        "replicas": total_actual(all_sets),
        "updatedReplicas": total_actual([new]),
        "readyReplicas": total_ready(all_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
        "preservedFailedReplicas": preserved_failed or None,
        "failedMachines": [dict(m) for m in failed_machines],
    }
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    conditions = [dict(c) for c in old_status.get("conditions") or ()]
    if available >= max(spec.replicas - spec.max_unavailable - preserved_failed, 0):
        condition = new_condition(
            AVAILABLE, "True", MINIMUM_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        condition = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    status["conditions"] = set_condition(conditions, condition)
    return status


def complete(spec: Spec, status: Mapping[str, Any]) -> bool:
    """Every machine is of the new template and available, and this generation was seen."""
    return bool(
        status.get("updatedReplicas", 0) == spec.replicas
        and status.get("replicas", 0) == spec.replicas
        and status.get("availableReplicas", 0) == spec.replicas
        and status.get("observedGeneration", 0) >= spec.generation
    )


def progressing(old_status: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Something moved: more updated, fewer old, more ready or more available machines."""

    def get(status: Mapping[str, Any], key: str) -> int:
        return int(status.get(key) or 0)

    old_old = get(old_status, "replicas") - get(old_status, "updatedReplicas")
    new_old = get(new_status, "replicas") - get(new_status, "updatedReplicas")
    return (
        get(new_status, "updatedReplicas") > get(old_status, "updatedReplicas")
        or new_old < old_old
        or get(new_status, "readyReplicas") > get(old_status, "readyReplicas")
        or get(new_status, "availableReplicas") > get(old_status, "availableReplicas")
    )


def timed_out(spec: Spec, status: Mapping[str, Any], now: dt.datetime) -> bool:
    """No progress for ``progressDeadlineSeconds`` since the Progressing condition last
    changed; a completed rollout never times out, a timed-out one stays so."""
    if spec.progress_deadline_seconds is None:
        return False
    condition = get_condition(status.get("conditions") or (), PROGRESSING)
    if condition is None or condition.get("reason") == NEW_SET_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    since = parse_time(condition.get("lastUpdateTime"))
    if since is None:
        return False
    return since + dt.timedelta(seconds=spec.progress_deadline_seconds) < now


def rollout_status(
    spec: Spec,
    old_status: Mapping[str, Any],
    status: dict[str, Any],
    new_set_name: str | None,
    replica_failure: Condition | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """The status with Progressing brought up to date (MCM's ``syncRolloutStatus``)."""
    conditions = status["conditions"]
    current = get_condition(old_status.get("conditions") or (), PROGRESSING)
    already_complete = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == NEW_SET_AVAILABLE
    )
    subject = (
        f'MachineSet "{new_set_name}"' if new_set_name else f'Machine Deployment "{spec.name}"'
    )
    if not already_complete:
        if complete(spec, status):
            conditions = set_condition(
                conditions,
                new_condition(
                    PROGRESSING,
                    "True",
                    NEW_SET_AVAILABLE,
                    f"{subject} has successfully progressed.",
                    now,
                ),
            )
        elif progressing(old_status, status):
            condition = new_condition(
                PROGRESSING, "True", MACHINE_SET_UPDATED, f"{subject} is progressing.", now
            )
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                conditions = remove_condition(conditions, PROGRESSING)
            conditions = [*conditions, condition]
        elif timed_out(spec, {**status, "conditions": conditions}, now):
            conditions = set_condition(
                conditions,
                new_condition(
                    PROGRESSING, "False", TIMED_OUT, f"{subject} has timed out progressing.", now
                ),
            )
    if replica_failure is not None:
        conditions = set_condition(conditions, replica_failure)
    else:
        conditions = remove_condition(conditions, REPLICA_FAILURE)
    return {**status, "conditions": conditions}


def paused_condition(
    paused: bool, conditions: Sequence[Mapping[str, Any]], now: dt.datetime
) -> list[Condition] | None:
    """Progressing Unknown/DeploymentPaused while paused, …/DeploymentResumed on resume, so a
    paused deployment never times out; None when nothing changes (MCM's
    ``checkPausedConditions``)."""
    current = get_condition(conditions, PROGRESSING)
    if current is not None and current.get("reason") == TIMED_OUT:
        return None
    paused_now = current is not None and current.get("reason") == PAUSED
    if paused and not paused_now:
        condition = new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now)
    elif not paused and paused_now:
        condition = new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now)
    else:
        return None
    return set_condition(conditions, condition)


def requeue_after(
    spec: Spec, old_status: Mapping[str, Any], status: Mapping[str, Any], now: dt.datetime
) -> float | None:
    """When to look again so a stuck rollout is marked timed out on time (MCM's
    ``requeueStuckMachineDeployment``): None when no deadline applies."""
    current = get_condition(old_status.get("conditions") or (), PROGRESSING)
    if spec.progress_deadline_seconds is None or current is None:
        return None
    if complete(spec, status) or current.get("reason") == TIMED_OUT:
        return None
    since = parse_time(current.get("lastUpdateTime"))
    if since is None:
        return None
    after = (since + dt.timedelta(seconds=spec.progress_deadline_seconds) - now).total_seconds()
    return 0.0 if after < 1 else after + 1


def status_update_required(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """MCM's ``statusUpdateRequired``: counts, conditions, or a failed machine's description
    changed."""
    keys = (
        "availableReplicas",
        "collisionCount",
        "observedGeneration",
        "readyReplicas",
        "replicas",
        "updatedReplicas",
        "unavailableReplicas",
        "preservedFailedReplicas",
    )
    if any((old.get(k) or 0) != (new.get(k) or 0) for k in keys):
        return True
    if list(old.get("conditions") or ()) != list(new.get("conditions") or ()):
        return True
    old_failed = {
        (m.get("name"), (m.get("lastOperation") or {}).get("description"))
        for m in old.get("failedMachines") or ()
    }
    new_failed = [
        (m.get("name"), (m.get("lastOperation") or {}).get("description"))
        for m in new.get("failedMachines") or ()
    ]
    return len(old_failed) != len(new_failed) or any(m not in old_failed for m in new_failed)
