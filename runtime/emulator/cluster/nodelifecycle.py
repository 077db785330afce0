"""The node lifecycle controller's share: the ``node.kubernetes.io/unschedulable:NoSchedule``
taint follows ``spec.unschedulable`` (cordon/uncordon), pods on a node that is not Ready are
marked not Ready (so budgets stop counting them), and pods bound to a node that is gone are
force-deleted after the pod garbage collector's quarantine."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.runtime.emulator.cluster.loop import Deadlines
from kubetrio.runtime.emulator.cluster.objects import (
    Obj,
    Objects,
    condition,
    node_name,
    set_condition,
)
from kubetrio.runtime.emulator.cluster.options import ClusterSimulation
from kubetrio.runtime.emulator.cluster.scheduler import UNSCHEDULABLE_TAINT

# pkg/controller/podgc: a node must stay missing this long before its pods are deleted.
ORPHAN_QUARANTINE = 40.0


@dataclass
class NodeLifecycle:
    objs: Objects
    options: ClusterSimulation
    name: str = "node-lifecycle"
    watches: frozenset[str] = frozenset({"pods", "nodes"})
    _orphaned_since: dict[str, float] = field(default_factory=dict)

    def reconcile(self, now: float) -> float | None:
        deadlines = Deadlines()
        nodes: dict[str, Obj] = {}
        for node in self.objs.all(self.objs.nodes):
            nodes[node["metadata"]["name"]] = node
            self._sync_taint(node)
        orphans: set[str] = set()
        for pod in self.objs.all(self.objs.pods):
            bound = node_name(pod)
            if not bound:
                continue
            owner = nodes.get(bound)
            if owner is None:
                uid = str(pod["metadata"]["uid"])
                orphans.add(uid)
                at = self._orphaned_since.setdefault(uid, now) + ORPHAN_QUARANTINE
                if now >= at:
                    self.objs.delete(self.objs.pods, pod, grace=0)
                else:
                    deadlines.add(at)
            elif (
                condition(owner, "Ready") not in ("True", "") and condition(pod, "Ready") == "True"
            ):
                self._mark_not_ready(pod)
        for uid in set(self._orphaned_since) - orphans:
            del self._orphaned_since[uid]
        return deadlines.next

    def _mark_not_ready(self, pod: Obj) -> None:
        stamp = self.objs.clock.now_rfc3339()

        def change(p: Obj) -> None:
            set_condition(p, "Ready", "False", "NodeNotReady", stamp)

        self.objs.mutate(self.objs.pods, pod, change, status=True)

    def _sync_taint(self, node: Obj) -> None:
        spec = node.get("spec") or {}
        taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
        has = any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints)
        want = bool(spec.get("unschedulable"))
        if has == want:
            return
        stamp = self.objs.clock.now_rfc3339()

        def change(n: Obj) -> None:
            s = n.setdefault("spec", {})
            kept = [t for t in s.get("taints") or [] if t.get("key") != UNSCHEDULABLE_TAINT]
            if want:
                kept.append(
                    {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": stamp}
                )
            if kept:
                s["taints"] = kept
            else:
                s.pop("taints", None)

        self.objs.mutate(self.objs.nodes, node, change)
