"""Pods from a workload's pod template, and the counting every workload status reports."""

from __future__ import annotations

from typing import Any

from kubetrio.sim.cluster.objects import Obj, clone, owner_ref, pod_ready


def pod_from_template(owner: Obj, **metadata: Any) -> Obj:
    template = (owner.get("spec") or {}).get("template") or {}
    tmd = template.get("metadata") or {}
    md: Obj = {
        "namespace": owner["metadata"].get("namespace", "default"),
        "labels": dict(tmd.get("labels") or {}),
        "ownerReferences": [owner_ref(owner)],
    }
    if tmd.get("annotations"):
        md["annotations"] = dict(tmd["annotations"])
    md.update(metadata)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": clone(template.get("spec") or {}),
    }


def replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def ready_count(pods: list[Obj]) -> int:
    return sum(1 for p in pods if pod_ready(p))


def counts_differ(obj: Obj, counts: dict[str, int]) -> bool:
    """Whether ``obj``'s status reports other counts. A real API server drops a zero count
    (the fields are ``omitempty``), so an absent one reads as 0: otherwise a status of zeros
    would be written again on every pass, for ever."""
    status = obj.get("status") or {}
    return any(int(status.get(key) or 0) != value for key, value in counts.items())
