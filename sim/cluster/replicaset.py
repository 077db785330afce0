"""The ReplicaSet controller: as many active pods as ``spec.replicas`` (a deleted pod is replaced
at once, under a new name), surplus pods deleted not-ready first, status counts kept current.
Pods whose ReplicaSet is gone are the garbage collector's (``gc.collector``)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrio.sim.cluster.objects import (
    Obj,
    Objects,
    node_name,
    owners_with_children,
    pod_ready,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.templates import (
    active,
    counts_differ,
    pod_from_template,
    ready_count,
    replicas,
)


@dataclass
class ReplicaSets:
    objs: Objects
    options: ClusterSimulation
    name: str = "replicaset"
    watches: frozenset[str] = frozenset({"pods", "replicasets.apps"})

    def reconcile(self, now: float) -> float | None:
        objs = self.objs
        for rs, pods in owners_with_children(objs, objs.replicasets, objs.pods, "ReplicaSet"):
            self._sync(rs, pods)
        return None

    def _sync(self, rs: Obj, pods: list[Obj]) -> None:
        live = [p for p in pods if active(p)]
        want = replicas(rs)
        ns = rs["metadata"].get("namespace", "default")
        for _ in range(want - len(live)):
            pod = self.objs.create(
                self.objs.pods,
                ns,
                pod_from_template(rs, generateName=f"{rs['metadata']['name']}-"),
            )
            if pod is not None:
                live.append(pod)
        if len(live) > want:
            # Unscheduled, then not ready, then newest go first (controller.ActivePods order).
            live.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True)
            live.sort(key=lambda p: (bool(node_name(p)), pod_ready(p)))
            for pod in live[: len(live) - want]:
                self.objs.delete(self.objs.pods, pod)
            live = live[len(live) - want :]
        ready = ready_count(live)
        status = {
            "replicas": len(live),
            "fullyLabeledReplicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if counts_differ(rs, status):
            self.objs.mutate(
                self.objs.replicasets,
                rs,
                lambda r: r.setdefault("status", {}).update(status),
                status=True,
            )
