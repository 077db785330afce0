"""The node lifecycle controller's share: the NoSchedule taints follow the node's conditions
and ``spec.unschedulable`` (cordon/uncordon), pods on a node that is not Ready are
marked not Ready (so budgets stop counting them), and pods bound to a node that is gone are
force-deleted after the pod garbage collector's quarantine."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.loop import Deadlines
from kubetrio.sim.cluster.objects import (
    Change,
    Key,
    Obj,
    Objects,
    condition,
    node_name,
    set_condition,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.scheduler import UNSCHEDULABLE_TAINT

# pkg/controller/podgc: a node must stay missing this long before its pods are deleted.
ORPHAN_QUARANTINE = 40.0


@dataclass
class NodeLifecycle:
    """Incremental like the kubelet: a pass syncs the taints of the nodes that changed and
    visits the pods that changed, the pods bound to those nodes (there or not) and the pods in
    quarantine; the first pass and one after a failed pass visit everything."""

    objs: Objects
    options: ClusterSimulation
    name: str = "node-lifecycle"
    watches: frozenset[str] = frozenset({"pods", "nodes"})
    # Quarantine start by pod key, with the uid it was started for.
    _orphaned_since: dict[Key, tuple[str, float]] = field(default_factory=dict)
    # Noted by ``changed`` since the last pass.
    _full: bool = True
    _pods: set[Key] = field(default_factory=set)
    _nodes: set[str] = field(default_factory=set)

    def changed(self, rt: KindInfo, ev: Change) -> None:
        md = ev.obj["metadata"]
        if rt.group_resource == "nodes":
            self._nodes.add(md["name"])
            return
        self._pods.add((md.get("namespace", ""), md["name"]))

    def reconcile(self, now: float) -> float | None:
        full, self._full = self._full, False
        pods, self._pods = self._pods, set()
        nodes, self._nodes = self._nodes, set()
        try:
            return self._pass(now, None if full else (pods, nodes))
        except Exception:
            self._full = True  # what this pass took is lost: the next one looks at everything
            raise

    def _pass(self, now: float, changed: tuple[set[Key], set[str]] | None) -> float | None:
        """``changed``: the pods and nodes noted since the last pass (None: all of them)."""
        deadlines = Deadlines()
        visit: list[tuple[Key, Obj | None]]
        if changed is None:
            nodes = list(self.objs.all(self.objs.nodes))
            visit = [(_key(p), p) for p in self.objs.all(self.objs.pods)]
            for key in set(self._orphaned_since) - {k for k, _ in visit}:
                del self._orphaned_since[key]
        else:
            pods, names = changed
            found = (self.objs.get(self.objs.nodes, "", n) for n in sorted(names))
            nodes = [n for n in found if n is not None]
            keys = pods | set(self._orphaned_since)
            for name in names:
                keys |= self.objs.pods_on(name)
            visit = [(k, self.objs.get(self.objs.pods, *k)) for k in sorted(keys)]
        for node in nodes:
            self._sync_taint(node)
        for key, pod in visit:
            bound = node_name(pod) if pod is not None else ""
            owner = self.objs.get(self.objs.nodes, "", bound) if bound else None
            if pod is None or not bound or owner is not None:
                self._orphaned_since.pop(key, None)
            if pod is None or not bound:
                continue
            if owner is None:
                uid = str(pod["metadata"].get("uid", ""))
                held = self._orphaned_since.get(key)
                if held is None or held[0] != uid:
                    self._orphaned_since[key] = held = (uid, now)
                at = held[1] + ORPHAN_QUARANTINE
                if now >= at:
                    self.objs.delete(self.objs.pods, pod, grace=0)
                else:
                    deadlines.add(at)
            elif (
                condition(owner, "Ready") not in ("True", "") and condition(pod, "Ready") == "True"
            ):
                self._mark_not_ready(pod)
        return deadlines.next

    def _mark_not_ready(self, pod: Obj) -> None:
        stamp = self.objs.now_rfc3339()

        def change(p: Obj) -> None:
            set_condition(p, "Ready", "False", "NodeNotReady", stamp)

        self.objs.mutate(self.objs.pods, pod, change, status=True)

    def _sync_taint(self, node: Obj) -> None:
        """kube-controller-manager's NoSchedule tainting pass: the taints standing for the
        node's conditions (Ready False or Unknown, pressures) and for ``spec.unschedulable``
        are exactly those the node has now; others are left alone. (kube-apiserver's
        admission puts ``not-ready`` on every new Node; this is what takes it off.)"""
        spec = node.get("spec") or {}
        taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
        want = _condition_taints(node)
        if spec.get("unschedulable"):
            want.add(UNSCHEDULABLE_TAINT)
        has = {t.get("key") for t in taints if t.get("effect") == "NoSchedule"} & MANAGED_TAINTS
        if has == want:
            return
        stamp = self.objs.now_rfc3339()

        def change(n: Obj) -> None:
            s = n.setdefault("spec", {})
            current = [t for t in s.get("taints") or [] if isinstance(t, dict)]
            kept = [
                t
                for t in current
                if t.get("effect") != "NoSchedule"
                or t.get("key") not in MANAGED_TAINTS
                or t.get("key") in want
            ]
            present = {t.get("key") for t in kept if t.get("effect") == "NoSchedule"}
            kept += [
                {"key": key, "effect": "NoSchedule", "timeAdded": stamp}
                for key in sorted(want - present)
            ]
            if kept:
                s["taints"] = kept
            else:
                s.pop("taints", None)

        self.objs.mutate(self.objs.nodes, node, change)


# pkg/controller/nodelifecycle: the NoSchedule taint standing for each (condition, status).
CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): "node.kubernetes.io/not-ready",
    ("Ready", "Unknown"): "node.kubernetes.io/unreachable",
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
MANAGED_TAINTS = frozenset({*CONDITION_TAINTS.values(), UNSCHEDULABLE_TAINT})


def _condition_taints(node: Obj) -> set[str]:
    found = set()
    for c in (node.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict):
            taint = CONDITION_TAINTS.get((str(c.get("type")), str(c.get("status"))))
            if taint is not None:
                found.add(taint)
    return found


def _key(obj: Obj) -> Key:
    md = obj["metadata"]
    return (md.get("namespace", ""), md["name"])
