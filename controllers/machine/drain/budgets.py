"""PodDisruptionBudgets from the drain's point of view."""

from __future__ import annotations

from kubetrio.api.core import Pod
from kubetrio.api.policy import PodDisruptionBudget
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.util.labels import selector_matches


def budgets_for(pod: Pod, budgets: Lister[PodDisruptionBudget]) -> list[PodDisruptionBudget]:
    return [
        pdb
        for pdb in budgets.list(pod.metadata.namespace)
        if selector_matches(pdb.spec.selector, pod.metadata.labels)
    ]


def is_misconfigured(pdb: PodDisruptionBudget) -> bool:
    """A budget that can never allow an eviction: retrying would only wait out the drain.

    Fully observed, every expected pod healthy, and still zero disruptions allowed, with no
    eviction in flight (an in-flight one also holds the count at zero, legitimately).
    """
    status = pdb.status
    return (
        pdb.metadata.generation == status.observed_generation
        and status.expected_pods > 0
        and status.current_healthy >= status.expected_pods
        and status.disruptions_allowed == 0
        and not status.disrupted_pods
    )
