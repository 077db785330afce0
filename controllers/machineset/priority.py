"""Which machines a set deletes first when it has too many: MCM's ``ActiveMachines`` order.

Lowest ``machinepriority.machine.sapcloud.io`` first (the cluster autoscaler and users set "1"
on machines they want gone; unset or unparsable counts as 3), then machines marked for
deletion earliest, then by phase — Terminating, Failed, CrashLoopBackOff, Unknown, Pending,
Available, Running; a machine with no phase yet ranks with Terminating, as Go's zero value for
a missing map key does — and last the oldest machine, as MCM (unlike Kubernetes' ReplicaSet,
which prefers the newest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from kubetrio.api.machine import (
    PHASE_AVAILABLE,
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_TERMINATING,
    PHASE_UNKNOWN,
    PRESERVE_ANNOTATION,
    PRESERVE_AUTO_PRESERVED,
    Machine,
)
from kubetrio.api.machineset import (
    LAST_SCALER_CHANGE_ANNOTATION,
    MACHINE_PRIORITY_ANNOTATION,
    MARKED_FOR_DELETION_TIME_ANNOTATION,
)
from kubetrio.api.meta import parse_time
from kubetrio.runtime.util.clock import now

DEFAULT_PRIORITY = 3
PHASE_RANK = {
    PHASE_TERMINATING: 0,
    PHASE_FAILED: 1,
    PHASE_CRASH_LOOP_BACK_OFF: 2,
    PHASE_UNKNOWN: 3,
    PHASE_PENDING: 4,
    PHASE_AVAILABLE: 5,
    PHASE_RUNNING: 6,
}
_NEVER = datetime.min


def machine_priority(machine: Machine) -> int:
    try:
        return int(machine.metadata.annotations.get(MACHINE_PRIORITY_ANNOTATION, ""))
    except ValueError:
        return DEFAULT_PRIORITY


def _time(value: str | None) -> datetime | None:
    try:
        moment = parse_time(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=None) if moment is not None else None


def deletion_order(
    machine: Machine, at: datetime | None = None
) -> tuple[int, int, datetime, int, int, datetime, int, datetime, str]:
    """Sort key: smaller is deleted first. Preserved machines go last (MCM v0.62): of them,
    auto-preserved before those a user preserved, then the earliest to expire."""
    until = _time(machine.status.current_status.preserve_expiry_time)
    preserved = until is not None and until > (at or now().replace(tzinfo=None))
    auto = machine.metadata.annotations.get(PRESERVE_ANNOTATION) == PRESERVE_AUTO_PRESERVED
    marked = _time(machine.metadata.annotations.get(MARKED_FOR_DELETION_TIME_ANNOTATION))
    created = _time(machine.metadata.creation_timestamp) or _NEVER
    return (
        1 if preserved else 0,
        0 if preserved and auto else 1,
        until if preserved and until is not None else _NEVER,
        machine_priority(machine),
        0 if marked is not None else 1,
        marked or _NEVER,
        PHASE_RANK.get(machine.phase, 0),
        created,
        machine.name,  # a stable tie-break, so repeated passes pick the same machines
    )


def machines_to_delete(machines: Sequence[Machine], count: int) -> list[Machine]:
    """The ``count`` machines to delete first."""
    # The clock only when a machine is preserved (the order is also used outside a trio run).
    preserved = any(m.status.current_status.preserve_expiry_time for m in machines)
    moment = now().replace(tzinfo=None) if preserved else None
    return sorted(machines, key=lambda m: deletion_order(m, moment))[:count]


def marked_for_deletion(
    machines: Sequence[Machine], set_annotations: Mapping[str, str]
) -> list[Machine]:
    """MCM's ``getMachinesMarkedForDeletion``: the machines the cluster autoscaler marked
    (priority "1" and a marked-for-deletion time) no later than its last replica change the
    set knows of. They go even when the set has no surplus: the autoscaler lowered the
    deployment for exactly them, and a scale-up meanwhile must not keep them (cordoned by the
    autoscaler) while a newer machine goes instead."""
    changed = _time(set_annotations.get(LAST_SCALER_CHANGE_ANNOTATION))
    if changed is None:
        return []
    return [
        m
        for m in machines
        if m.metadata.annotations.get(MACHINE_PRIORITY_ANNOTATION) == "1"
        and (marked := _time(m.metadata.annotations.get(MARKED_FOR_DELETION_TIME_ANNOTATION)))
        is not None
        and marked <= changed
    ]
