"""What a DELETE does to an object's garbage-collection finalizers (the apiserver's
``deletionFinalizersForGarbageCollection``): ``propagationPolicy`` (or the deprecated
``orphanDependents``) wins, then a GC finalizer the object already carries, then the kind's
default policy. The collector then acts on the finalizers, so the choice is recorded in the
object itself and survives until the collector has done its part."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.errors import invalid
from kubetrio.emulator.kinds import ResourceType

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
GC_FINALIZERS = (ORPHAN, FOREGROUND)

# Kinds whose served version orphans dependents unless told otherwise, for backwards
# compatibility (batch/v1 Jobs; v1 ReplicationControllers too, not served here). Every other
# kind deletes its dependents in the background by default.
_ORPHAN_BY_DEFAULT = frozenset({"jobs.batch"})

JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning"
)


def orphans_by_default(rt: ResourceType) -> bool:
    return rt.key in _ORPHAN_BY_DEFAULT


def _should_orphan(
    rt: ResourceType, finalizers: list[str], propagation: str | None, orphan: bool | None
) -> bool:
    if orphan is not None:
        return orphan
    if propagation is not None:
        return propagation == "Orphan"
    for f in finalizers:
        if f in GC_FINALIZERS:
            return f == ORPHAN
    return orphans_by_default(rt)


def _should_delete_foreground(
    finalizers: list[str], propagation: str | None, orphan: bool | None
) -> bool:
    if orphan is not None:
        return False
    if propagation is not None:
        return propagation == "Foreground"
    return FOREGROUND in finalizers


def deletion_finalizers(
    rt: ResourceType, md: dict[str, Any], propagation: str | None, orphan: bool | None
) -> list[str] | None:
    """The finalizers the object must carry once this DELETE is applied; None when they stay
    as they are. Other finalizers keep their order; a GC finalizer goes last."""
    current = [f for f in md.get("finalizers") or [] if isinstance(f, str)]
    wanted = [f for f in current if f not in GC_FINALIZERS]
    if _should_orphan(rt, current, propagation, orphan):
        wanted.append(ORPHAN)
    if _should_delete_foreground(current, propagation, orphan):
        wanted.append(FOREGROUND)
    if set(wanted) == set(current):
        return None
    return wanted


def delete_warning(rt: ResourceType, propagation: str | None, orphan: bool | None) -> str | None:
    """The Warning a DELETE that leaves an orphan-by-default kind to its default gets."""
    if propagation is None and orphan is None and orphans_by_default(rt):
        return JOB_DELETE_WARNING
    return None


def check_gc_finalizers(group: str, kind: str, name: str, md: dict[str, Any]) -> None:
    """ValidateFinalizers: an object cannot ask to orphan and to delete its dependents."""
    finalizers = md.get("finalizers")
    if not isinstance(finalizers, list) or not set(GC_FINALIZERS) <= set(finalizers):
        return
    shown = "[]string{" + ", ".join(f'"{f}"' for f in finalizers) + "}"
    raise invalid(
        group,
        kind,
        name,
        [
            (
                "FieldValueInvalid",
                "metadata.finalizers",
                f"Invalid value: {shown}: finalizer {ORPHAN} and {FOREGROUND} cannot be both set",
            )
        ],
    )
