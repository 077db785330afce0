"""The DaemonSet controller: one pod per eligible node (node selector, taints against the
template's tolerations plus those the real controller adds), bound directly with
``spec.nodeName``; a deleted pod is replaced at once while its node exists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrio.sim.cluster.objects import (
    Obj,
    Objects,
    active,
    deleting,
    node_name,
    owners_with_children,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.scheduler import fits
from kubetrio.sim.cluster.templates import pod_from_template, ready_count

# util.AddOrUpdateDaemonPodTolerations: daemon pods survive cordons and node trouble.
DAEMON_TOLERATIONS: tuple[dict[str, Any], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@dataclass
class DaemonSets:
    objs: Objects
    options: ClusterSimulation
    name: str = "daemonset"
    watches: frozenset[str] = frozenset({"pods", "nodes", "daemonsets.apps"})

    def reconcile(self, now: float) -> float | None:
        objs = self.objs
        owned = owners_with_children(objs, objs.daemonsets, objs.pods, "DaemonSet")
        if not owned:
            return None  # no DaemonSet: no need to read every node on each change
        nodes = [n for n in objs.all(objs.nodes) if not deleting(n)]
        for ds, pods in owned:
            self._sync(ds, pods, nodes)
        return None

    def _sync(self, ds: Obj, owned: list[Obj], nodes: list[Obj]) -> None:
        ns = ds["metadata"].get("namespace", "default")
        probe = self._pod(ds, "")
        eligible = {n["metadata"]["name"] for n in nodes if fits(probe, n)}
        by_node: dict[str, list[Obj]] = {}
        for pod in owned:
            if active(pod):
                by_node.setdefault(node_name(pod), []).append(pod)
        for node in sorted(eligible):
            if not by_node.get(node):
                created = self.objs.create(self.objs.pods, ns, self._pod(ds, node))
                if created is not None:
                    by_node[node] = [created]
        for node, pods in by_node.items():
            extra = pods if node not in eligible else pods[1:]
            for pod in extra:
                self.objs.delete(self.objs.pods, pod)
        live = [pods[0] for node, pods in by_node.items() if node in eligible and pods]
        ready = ready_count(live)
        status = {
            "desiredNumberScheduled": len(eligible),
            "currentNumberScheduled": len(live),
            "updatedNumberScheduled": len(live),
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        if {k: (ds.get("status") or {}).get(k) for k in status} != status:
            self.objs.mutate(
                self.objs.daemonsets,
                ds,
                lambda d: d.setdefault("status", {}).update(status),
                status=True,
            )

    @staticmethod
    def _pod(ds: Obj, node: str) -> Obj:
        pod = pod_from_template(ds, generateName=f"{ds['metadata']['name']}-")
        spec = pod["spec"]
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [dict(t) for t in DAEMON_TOLERATIONS if t not in tolerations]
        spec["tolerations"] = tolerations
        if node:
            spec["nodeName"] = node
        return pod
