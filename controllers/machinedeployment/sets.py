"""The numbers of a MachineSet the rollout arithmetic reads, apart from the API object so the
same logic runs in the controller and in the in-process model the property tests drive."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubetrio.controllers.machinedeployment.revisions import revision


@dataclass(frozen=True, slots=True)
class SetState:
    name: str
    replicas: int  # spec.replicas: what the deployment asked of it
    created: str = ""  # creationTimestamp (RFC 3339 sorts as text); ties break on name
    actual: int = 0  # status.replicas: machines that exist
    ready: int = 0
    available: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    deleting: bool = False
    preserved_failed: int = 0  # status.preservedFailedReplicas


def age_key(created: str, annotations: Mapping[str, str], name: str) -> tuple[str, int, str]:
    """Creation time (MCM's ``MachineSetsByCreationTimestamp``); sets created within one
    second (timestamps have second precision) by revision, then by name."""
    return (created, revision(annotations) or 0, name)


def by_age(sets: Iterable[SetState]) -> list[SetState]:
    """Oldest first."""
    return sorted(sets, key=lambda s: age_key(s.created, s.annotations, s.name))


def by_size_older(sets: Iterable[SetState]) -> list[SetState]:
    """Largest first, then older first (MCM's ``MachineSetsBySizeOlder``): proportional
    scaling hands leftovers to the biggest set."""
    ordered = by_age(sets)
    return sorted(ordered, key=lambda s: -s.replicas)


def active(sets: Iterable[SetState | None]) -> list[SetState]:
    return [s for s in sets if s is not None and s.replicas > 0]


def total_replicas(sets: Sequence[SetState | None]) -> int:
    return sum(s.replicas for s in sets if s is not None)


def total_actual(sets: Sequence[SetState | None]) -> int:
    return sum(s.actual for s in sets if s is not None)


def total_ready(sets: Sequence[SetState | None]) -> int:
    return sum(s.ready for s in sets if s is not None)


def total_available(sets: Sequence[SetState | None]) -> int:
    return sum(s.available for s in sets if s is not None)
