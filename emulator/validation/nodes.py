"""Node rules: taints (reported under ``metadata.taints``, as a cluster words them)."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator.validation import names, objectmeta
from kubetrio.emulator.validation.causes import Causes, GoValue

Obj = dict[str, Any]

EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _taints(obj: Obj, causes: Causes) -> None:
    taints = (obj.get("spec") or {}).get("taints")
    if not isinstance(taints, list):
        return
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        if not isinstance(taint, dict):
            continue
        at = f"metadata.taints[{i}]"
        key = taint.get("key") or ""
        causes.extend(f"{at}.key", key, names.qualified_name(key))
        value = taint.get("value") or ""
        causes.extend(f"{at}.value", value, names.label_value(value))
        effect = taint.get("effect") or ""
        if not effect:
            causes.required(f"{at}.effect")
        elif effect not in EFFECTS:
            causes.unsupported(f"{at}.effect", effect, EFFECTS)
        if (key, effect) in seen:
            shown = {"Key": key, "Value": value, "Effect": effect}
            shown["TimeAdded"] = taint.get("timeAdded")
            causes.duplicate(
                at,
                GoValue(json.dumps(shown, separators=(",", ":"))),
                "taints must be unique by key and effect pair",
            )
        seen.add((key, effect))


def create(obj: Obj, causes: Causes) -> None:
    _taints(obj, causes)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    """The strategy runs the create rules and the update rules, each checking taints."""
    objectmeta.fields(new.get("metadata") or {}, causes)
    _taints(new, causes)
    _taints(new, causes)


RULES = {"nodes": (create, update, None)}
