"""A pod's quality-of-service class (GetPodQOS), which the pod strategy writes to
``status.qosClass`` on create and an in-place resize may not change."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubetrio.emulator import quantity

Obj = dict[str, Any]


def _list(parent: Obj, key: str) -> list[Any]:
    value = parent.get(key)
    return value if isinstance(value, list) else []


def qos_class(spec: Obj) -> str:
    """GetPodQOS: BestEffort without any cpu/memory request or limit, Guaranteed when every
    container limits both and requests what it limits, Burstable otherwise."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for key in ("initContainers", "containers"):
        for c in _list(spec, key):
            resources = c.get("resources") if isinstance(c, dict) else None
            resources = resources if isinstance(resources, dict) else {}
            for table, into in (("requests", requests), ("limits", limits)):
                given = resources.get(table)
                found = set()
                for name, raw in (given if isinstance(given, dict) else {}).items():
                    amount = quantity.parse(raw)
                    if name in ("cpu", "memory") and amount is not None and amount > 0:
                        into[name] = into.get(name, Fraction(0)) + amount
                        found.add(name)
                if table == "limits" and found != {"cpu", "memory"}:
                    guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    matched = all(limits.get(n) == v for n, v in requests.items())
    if guaranteed and matched and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
