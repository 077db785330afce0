"""The DaemonSet strategy's template generation, which apps/v1 shows as the
``deprecated.daemonset.template.generation`` annotation: 1 on create, one more each time an
update changes the pod template (older clients and the rollout history read it)."""

from __future__ import annotations

from typing import Any

ANNOTATION = "deprecated.daemonset.template.generation"


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.setdefault("metadata", {})
    annotations = md.get("annotations")
    if isinstance(annotations, dict):
        return annotations
    fresh: dict[str, Any] = {}
    md["annotations"] = fresh
    return fresh


def prepare_create(obj: dict[str, Any]) -> None:
    _annotations(obj)[ANNOTATION] = "1"


def prepare_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    was = (old.get("metadata") or {}).get("annotations") or {}
    try:
        generation = int(was.get(ANNOTATION, "1"))
    except ValueError:
        generation = 1
    if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
        generation += 1
    _annotations(new)[ANNOTATION] = str(generation)
