"""The scheduler: binds each pending pod to the Ready, schedulable node it fits with the fewest
pods (node selector equality, taints and tolerations, cordoned nodes excluded), as a Binding
would: ``spec.nodeName`` set, PodScheduled=True. A pod nothing fits gets PodScheduled=False
(Unschedulable) and is retried whenever nodes or pods change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrio.runtime.emulator.cluster.objects import (
    Obj,
    Objects,
    condition,
    deleting,
    labels_match,
    node_name,
    set_condition,
)
from kubetrio.runtime.emulator.cluster.options import ClusterSimulation

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def tolerates(tolerations: list[Any], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def node_taints(node: Obj) -> list[dict[str, Any]]:
    """Scheduling taints, with ``spec.unschedulable`` as the taint it stands for."""
    spec = node.get("spec") or {}
    taints = [
        t
        for t in spec.get("taints") or []
        if isinstance(t, dict) and t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    if spec.get("unschedulable") and not any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    return taints


def fits(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if not labels_match(selector, node["metadata"].get("labels") or {}):
        return False
    tolerations = spec.get("tolerations") or []
    return all(tolerates(tolerations, t) for t in node_taints(node))


@dataclass
class Scheduler:
    objs: Objects
    options: ClusterSimulation
    name: str = "scheduler"
    watches: frozenset[str] = frozenset({"pods", "nodes"})

    def reconcile(self, now: float) -> float | None:
        nodes = [
            n
            for n in self.objs.all(self.objs.nodes)
            if condition(n, "Ready") == "True" and not deleting(n)
        ]
        load = {n["metadata"]["name"]: 0 for n in nodes}
        pending: list[Obj] = []
        for pod in self.objs.all(self.objs.pods):
            bound = node_name(pod)
            if bound:
                if bound in load and (pod.get("status") or {}).get("phase") not in (
                    "Succeeded",
                    "Failed",
                ):
                    load[bound] += 1
            elif (
                not deleting(pod)
                and (pod.get("spec") or {}).get("schedulerName", "default-scheduler")
                == "default-scheduler"
            ):
                pending.append(pod)
        pending.sort(
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"])
        )
        for pod in pending:
            candidates = [n["metadata"]["name"] for n in nodes if fits(pod, n)]
            if not candidates:
                self._unschedulable(pod, len(load))
                continue
            best = min(candidates, key=lambda n: (load[n], n))
            load[best] += 1
            self._bind(pod, best)
        return None

    def _bind(self, pod: Obj, node: str) -> None:
        bound = self.objs.mutate(
            self.objs.pods, pod, lambda p: p.setdefault("spec", {}).update(nodeName=node)
        )
        if bound is not None:
            now = self.objs.clock.now_rfc3339()
            self.objs.mutate(
                self.objs.pods,
                bound,
                lambda p: set_condition(p, "PodScheduled", "True", "Scheduled", now),
                status=True,
            )

    def _unschedulable(self, pod: Obj, total: int) -> None:
        if condition(pod, "PodScheduled") == "False":
            return
        now = self.objs.clock.now_rfc3339()
        message = f"0/{total} nodes are available: no Ready, schedulable node fits the pod."
        self.objs.mutate(
            self.objs.pods,
            pod,
            lambda p: set_condition(
                p, "PodScheduled", "False", "Unschedulable", now, message=message
            ),
            status=True,
        )
