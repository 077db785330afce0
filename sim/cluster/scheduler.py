"""The scheduler: binds each pending pod to the Ready, schedulable node it fits with the fewest
pods (node selector equality, taints and tolerations, cordoned nodes excluded) through the
binding subresource's own path (``emulator/binding.py``): ``spec.nodeName`` and
PodScheduled=True in one write. A pod nothing fits gets PodScheduled=False
(Unschedulable) and is retried whenever a node changes (or the pod does).

The cost of a pass is the pending pods', not the cluster's: each node's load and the
schedulable nodes in (load, name) order are kept from store events, so a pod that fits the
least loaded node is placed in O(log nodes)::

    ClusterSimulation(scheduler=True)  # on by default; ``kubetrio emulator --simulate``
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedList

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.objects import (
    Change,
    Key,
    Obj,
    Objects,
    condition,
    deleting,
    labels_match,
    node_name,
    set_condition,
)
from kubetrio.sim.cluster.options import ClusterSimulation

log = logging.getLogger("kubetrio.emulator.cluster")

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


def schedulable(node: Obj) -> bool:
    """Whether pods may be placed on the node at all (then ``fits`` decides per pod)."""
    return condition(node, "Ready") == "True" and not deleting(node)


def pending(pod: Obj) -> bool:
    """Whether the pod waits for this scheduler."""
    return (
        not node_name(pod)
        and not deleting(pod)
        and (pod.get("spec") or {}).get("schedulerName", "default-scheduler") == "default-scheduler"
    )


def counted_on(pod: Obj) -> str:
    """The node whose load the pod adds to ("" for none): bound and not finished."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return ""
    return node_name(pod)


@dataclass
class Scheduler:
    """Incremental: each node's load, the pending pods and the schedulable nodes ordered by
    (load, name) are kept from store events, so a pass looks only at pending pods and walks the
    nodes from the least loaded until one fits — the node a whole-cluster pass picks. A pod no
    node fits is tried again once a node changed (only nodes decide whether a pod fits) or the
    pod itself did; before, every pass tried it, with the same outcome."""

    objs: Objects
    options: ClusterSimulation
    name: str = "scheduler"
    watches: frozenset[str] = frozenset({"pods", "nodes"})
    _known: bool = False  # filled from the store (the first pass); then kept by ``changed``
    _load: dict[str, int] = field(default_factory=dict)
    _counted: dict[Key, str] = field(default_factory=dict)  # pod → node it adds load to
    _schedulable: set[str] = field(default_factory=set)
    _order: SortedList[tuple[int, str]] = field(default_factory=SortedList)
    _pending: set[Key] = field(default_factory=set)
    _stuck: set[Key] = field(default_factory=set)  # pending pods no node fitted
    _nodes_changed: bool = False

    def changed(self, rt: KindInfo, ev: Change) -> None:
        if self._known:
            self._note(rt.group_resource, ev.obj, gone=ev.type == "DELETED")

    def _note(self, resource: str, obj: Obj, gone: bool) -> None:
        md = obj["metadata"]
        if resource == "nodes":
            self._nodes_changed = True
            self._set_schedulable(md["name"], not gone and schedulable(obj))
            return
        key = (md.get("namespace", ""), md["name"])
        old = self._counted.pop(key, "")
        if old:
            self._add_load(old, -1)
        new = "" if gone else counted_on(obj)
        if new:
            self._counted[key] = new
            self._add_load(new, 1)
        self._stuck.discard(key)
        if not gone and pending(obj):
            self._pending.add(key)
        else:
            self._pending.discard(key)

    def _set_schedulable(self, node: str, on: bool) -> None:
        if on and node not in self._schedulable:
            self._schedulable.add(node)
            self._order.add((self._load.get(node, 0), node))
        elif not on and node in self._schedulable:
            self._schedulable.remove(node)
            self._order.remove((self._load.get(node, 0), node))

    def _add_load(self, node: str, delta: int) -> None:
        load = self._load.get(node, 0)
        if node in self._schedulable:
            self._order.remove((load, node))
            self._order.add((load + delta, node))
        if load + delta:
            self._load[node] = load + delta
        else:
            del self._load[node]

    def reconcile(self, now: float) -> float | None:
        if not self._known:
            for n in self.objs.all(self.objs.nodes):
                self._note("nodes", n, gone=False)
            for p in self.objs.all(self.objs.pods):
                self._note("pods", p, gone=False)
            self._known = True
        retry, self._nodes_changed = self._nodes_changed, False
        if retry:
            self._stuck.clear()
        todo = [
            pod
            for key in self._pending - self._stuck
            if (pod := self.objs.get(self.objs.pods, *key)) is not None
        ]
        todo.sort(
            key=lambda p: (
                p["metadata"].get("creationTimestamp", ""),
                p["metadata"]["name"],
                p["metadata"].get("namespace", ""),
            )
        )
        refused: list[str] = []  # binds the API refused still count for the rest of the pass
        try:
            for pod in todo:
                best = self._best(pod)
                if best is None:
                    self._stuck.add((pod["metadata"].get("namespace", ""), pod["metadata"]["name"]))
                    self._unschedulable(pod, len(self._schedulable))
                elif not self._bind(pod, best):
                    self._add_load(best, 1)
                    refused.append(best)
        finally:
            for name in refused:
                self._add_load(name, -1)
        return None

    def _best(self, pod: Obj) -> str | None:
        """The least loaded schedulable node the pod fits (ties: by name)."""
        for _, name in self._order:
            node = self.objs.get(self.objs.nodes, "", name)
            if node is not None and fits(pod, node):
                return name
        return None

    def _bind(self, pod: Obj, node: str) -> bool:
        """Whether the binding was written (its own event then adds the load)."""
        return self.objs.bind(pod, node)

    def _unschedulable(self, pod: Obj, total: int) -> None:
        if condition(pod, "PodScheduled") == "False":
            return
        now = self.objs.now_rfc3339()
        message = f"0/{total} nodes are available: no Ready, schedulable node fits the pod."
        self.objs.mutate(
            self.objs.pods,
            pod,
            lambda p: set_condition(
                p, "PodScheduled", "False", "Unschedulable", now, message=message
            ),
            status=True,
        )
