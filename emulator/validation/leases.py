"""Lease rules (``ValidateLeaseSpec``): a positive duration, non-negative transitions."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]


def create(obj: Obj, causes: Causes) -> None:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")


def update(new: Obj, old: Obj, causes: Causes) -> None:
    create(new, causes)


RULES = {"leases.coordination.k8s.io": (create, update, None)}
