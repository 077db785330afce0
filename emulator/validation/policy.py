"""PodDisruptionBudget rules (``ValidatePodDisruptionBudgetSpec``): one of minAvailable and
maxUnavailable, each a non-negative count or a percentage up to 100%, and a valid selector."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator.validation import labelselector, names, objectmeta
from kubetrio.emulator.validation.causes import Causes, GoValue

Obj = dict[str, Any]

EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


def int_or_percent(value: Any, field: str, causes: Causes) -> None:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if value < 0:
            causes.invalid(field, value, "must be greater than or equal to 0")
        return
    if not isinstance(value, str):
        return
    problems = names.percent(value)
    if problems:
        causes.extend(field, value, problems)
    elif int(value[:-1]) > 100:
        causes.invalid(field, value, "must not be greater than 100%")


def create(obj: Obj, causes: Causes) -> None:
    spec = obj.get("spec") or {}
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    if least is not None and most is not None:
        shown = {
            "MinAvailable": least,
            "Selector": spec.get("selector"),
            "MaxUnavailable": most,
            "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
        }
        causes.invalid(
            "spec",
            GoValue(json.dumps(shown, separators=(",", ":"))),
            "minAvailable and maxUnavailable cannot be both set",
        )
    if least is not None:
        int_or_percent(least, "spec.minAvailable", causes)
    if most is not None:
        int_or_percent(most, "spec.maxUnavailable", causes)
    labelselector.validate(spec.get("selector"), "spec.selector", causes)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        causes.unsupported("spec.unhealthyPodEvictionPolicy", policy, EVICTION_POLICIES)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)
    create(new, causes)


RULES = {"poddisruptionbudgets.policy": (create, update, None)}
