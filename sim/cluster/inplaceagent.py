"""The node's in-place update agent (Gardener's node agent in GEP-31): once the machine
controller has drained a node and set its ``InPlaceUpdate`` condition to ReadyForUpdate, the
agent updates the node where it runs (here: waits ``in_place_update_delay``) and reports with
the ``update-result`` label — ``failed`` with a reason annotation when the node carries
``sim.kubetrio.io/in-place-update-fails`` (its value is the reason).

It also plays the part of whatever removes ``critical-components-not-ready`` in a real
cluster: MCM taints an updated node so until its critical components run again; here they
are up as soon as the update is done and the node is back in service.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.api.machine import (
    ANNOTATION_MACHINE_UPDATE_FAILED_REASON,
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
    LABEL_VALUE_NODE_UPDATE_FAILED,
    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL,
    NODE_IN_PLACE_UPDATE,
    READY_FOR_UPDATE,
    UPDATE_SUCCESSFUL,
)
from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.loop import Deadlines
from kubetrio.sim.cluster.objects import Change, Obj, Objects
from kubetrio.sim.cluster.options import IN_PLACE_UPDATE_FAILS_ANNOTATION, ClusterSimulation

CRITICAL_COMPONENTS_TAINT = "node.gardener.cloud/critical-components-not-ready"


def _reason(node: Obj) -> str:
    for c in (node.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == NODE_IN_PLACE_UPDATE:
            return str(c.get("reason", ""))
    return ""


@dataclass
class InPlaceUpdateAgent:
    """Incremental: a pass visits the nodes that changed and those whose update is under way
    (the first pass, and one after a failed pass, visit every node)."""

    objs: Objects
    options: ClusterSimulation
    name: str = "in-place-update-agent"
    watches: frozenset[str] = frozenset({"nodes"})
    # Node name -> (uid, when its update started).
    _updating: dict[str, tuple[str, float]] = field(default_factory=dict)
    _full: bool = True
    _changed: set[str] = field(default_factory=set)

    def changed(self, rt: KindInfo, ev: Change) -> None:
        self._changed.add(ev.obj["metadata"]["name"])

    def reconcile(self, now: float) -> float | None:
        full, self._full = self._full, False
        changed, self._changed = self._changed, set()
        try:
            if full:
                nodes = list(self.objs.all(self.objs.nodes))
            else:
                names = sorted(changed | set(self._updating))
                found = (self.objs.get(self.objs.nodes, "", n) for n in names)
                nodes = [n for n in found if n is not None]
            return self._pass(now, nodes, full)
        except Exception:
            self._full = True
            raise

    def _pass(self, now: float, nodes: list[Obj], full: bool) -> float | None:
        deadlines = Deadlines()
        visited: set[str] = set()
        for node in nodes:
            md = node["metadata"]
            name = md["name"]
            visited.add(name)
            labels = md.get("labels") or {}
            reason = _reason(node)
            if reason == READY_FOR_UPDATE and LABEL_NODE_UPDATE_RESULT not in labels:
                uid = str(md.get("uid", ""))
                started = self._updating.get(name)
                if started is None or started[0] != uid:
                    started = self._updating[name] = (uid, now)
                due = started[1] + self.options.in_place_update_delay
                if now >= due:
                    self._report(node)
                    del self._updating[name]
                else:
                    deadlines.add(due)
                continue
            self._updating.pop(name, None)
            if reason == UPDATE_SUCCESSFUL and LABEL_NODE_CANDIDATE_FOR_UPDATE not in labels:
                self._critical_components_up(node)
        if full:
            for name in set(self._updating) - visited:
                del self._updating[name]
        return deadlines.next

    def _report(self, node: Obj) -> None:
        annotations = node["metadata"].get("annotations") or {}
        failure = annotations.get(IN_PLACE_UPDATE_FAILS_ANNOTATION)

        def change(n: Obj) -> None:
            md = n["metadata"]
            if failure is None:
                md.setdefault("labels", {})[LABEL_NODE_UPDATE_RESULT] = (
                    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL
                )
                return
            md.setdefault("labels", {})[LABEL_NODE_UPDATE_RESULT] = LABEL_VALUE_NODE_UPDATE_FAILED
            md.setdefault("annotations", {})[ANNOTATION_MACHINE_UPDATE_FAILED_REASON] = failure

        self.objs.mutate(self.objs.nodes, node, change)

    def _critical_components_up(self, node: Obj) -> None:
        spec = node.get("spec") or {}
        taints = spec.get("taints") or []
        if spec.get("unschedulable") or not any(
            t.get("key") == CRITICAL_COMPONENTS_TAINT for t in taints
        ):
            return

        def change(n: Obj) -> None:
            kept = [
                t
                for t in n.setdefault("spec", {}).get("taints") or []
                if t.get("key") != CRITICAL_COMPONENTS_TAINT
            ]
            if kept:
                n["spec"]["taints"] = kept
            else:
                n["spec"].pop("taints", None)

        self.objs.mutate(self.objs.nodes, node, change)
