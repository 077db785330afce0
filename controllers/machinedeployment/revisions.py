"""Revision bookkeeping on MachineSets and their deployment (MCM's deployment_util):
each template a deployment ever had is a set with a ``deployment.kubernetes.io/revision``; a set
brought back (rollback, or a template reverted) takes the next number and remembers its old ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
PREFER_NO_SCHEDULE_KEY = "deployment.machine.sapcloud.io/prefer-no-schedule"
UNFREEZE_ANNOTATION = "safety.machine.sapcloud.io/unfreeze"
TRIGGER_DELETION_ANNOTATION = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"

# A deployment's own bookkeeping, never copied to or from its sets.
SKIPPED_ANNOTATIONS = frozenset(
    {
        LAST_APPLIED_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        PREFER_NO_SCHEDULE_KEY,
        UNFREEZE_ANNOTATION,
        TRIGGER_DELETION_ANNOTATION,
    }
)


def revision(annotations: Mapping[str, str]) -> int | None:
    """The revision number; 0 when unset, None when unreadable (such a set is skipped)."""
    value = annotations.get(REVISION_ANNOTATION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def max_revision(all_annotations: Iterable[Mapping[str, str]]) -> int:
    return max((r for a in all_annotations if (r := revision(a)) is not None), default=0)


def last_revision(all_annotations: Iterable[Mapping[str, str]]) -> int:
    """The second highest revision: where ``rollbackTo.revision: 0`` goes."""
    highest = second = 0
    for each in all_annotations:
        value = revision(each)
        if value is None:
            continue
        if value >= highest:
            highest, second = value, highest
        elif value > second:
            second = value
    return second


def replicas_annotations(desired: int, max_replicas: int) -> dict[str, str]:
    """What a set remembers of the deployment size it was scaled for (proportional scaling)."""
    return {DESIRED_REPLICAS_ANNOTATION: str(desired), MAX_REPLICAS_ANNOTATION: str(max_replicas)}


def int_annotation(annotations: Mapping[str, str], key: str) -> int | None:
    try:
        return int(annotations[key])
    except (KeyError, ValueError):
        return None


def new_set_annotations(
    deployment_annotations: Mapping[str, str],
    set_annotations: Mapping[str, str],
    new_revision: int,
) -> dict[str, str]:
    """The new set's annotations: the deployment's own (bar bookkeeping), and the new revision
    if it is higher, the one it replaces going to the history (MCM's
    ``SetNewMachineSetAnnotations``). An unreadable revision is left alone."""
    result = dict(set_annotations)
    copied = False
    for key, value in deployment_annotations.items():
        if key not in SKIPPED_ANNOTATIONS and result.get(key) != value:
            result[key] = value
            copied = True
    old = set_annotations.get(REVISION_ANNOTATION)
    current = revision(set_annotations)
    if current is None:
        return result
    if current < new_revision:
        result[REVISION_ANNOTATION] = str(new_revision)
        copied = True
    if old is not None and copied and current < new_revision:
        history = set_annotations.get(REVISION_HISTORY_ANNOTATION, "")
        result[REVISION_HISTORY_ANNOTATION] = f"{history},{old}" if history else old
    return result


def rollback_annotations(
    deployment_annotations: Mapping[str, str], set_annotations: Mapping[str, str]
) -> dict[str, str]:
    """The deployment's annotations after a rollback to a set: its bookkeeping kept, the rest
    taken from the set (MCM's ``SetMachineDeploymentAnnotationsTo``)."""
    result = {k: v for k, v in deployment_annotations.items() if k in SKIPPED_ANNOTATIONS}
    result.update({k: v for k, v in set_annotations.items() if k not in SKIPPED_ANNOTATIONS})
    return result
