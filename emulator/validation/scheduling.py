"""PriorityClass rules: user-defined values up to a billion (``system-`` names are reserved),
a known preemption policy, and both frozen once created."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
# The classes a cluster creates itself, the only ones allowed the system- prefix.
SYSTEM_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


def create(obj: Obj, causes: Causes) -> None:
    name = (obj.get("metadata") or {}).get("name") or ""
    value = obj.get("value")
    if name.startswith("system-"):
        if SYSTEM_CLASSES.get(name) != value:
            causes.forbidden(
                "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only. "
                f"error: {name} is not a known system priority class",
            )
    elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        causes.forbidden(
            "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.unsupported("preemptionPolicy", policy, PREEMPTION_POLICIES)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    if new.get("value") != old.get("value"):
        causes.forbidden("value", "may not be changed in an update.")
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        causes.invalid("preemptionPolicy", new.get("preemptionPolicy"), "field is immutable")


RULES = {"priorityclasses.scheduling.k8s.io": (create, update, None)}
