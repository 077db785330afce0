"""The ReplicaSet controller: as many active pods as ``spec.replicas`` (a deleted pod is replaced
at once, under a new name), surplus pods deleted not-ready first, status counts kept current,
and pods whose ReplicaSet is gone deleted (the garbage collector's part)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrio.runtime.emulator.cluster.objects import (
    Obj,
    Objects,
    controller_uid,
    deleting,
    node_name,
    pod_ready,
)
from kubetrio.runtime.emulator.cluster.options import ClusterSimulation
from kubetrio.runtime.emulator.cluster.templates import (
    active,
    pod_from_template,
    ready_count,
    replicas,
)


def owned_by_kind(pod: Obj, kind: str) -> bool:
    return any(
        isinstance(r, dict) and r.get("controller") and r.get("kind") == kind
        for r in pod["metadata"].get("ownerReferences") or []
    )


@dataclass
class ReplicaSets:
    objs: Objects
    options: ClusterSimulation
    name: str = "replicaset"
    watches: frozenset[str] = frozenset({"pods", "replicasets.apps"})

    def reconcile(self, now: float) -> float | None:
        owners: dict[str, Obj] = {}
        for rs in self.objs.all(self.objs.replicasets):
            owners[str(rs["metadata"]["uid"])] = rs
        pods: dict[str, list[Obj]] = {uid: [] for uid in owners}
        for pod in self.objs.all(self.objs.pods):
            if not owned_by_kind(pod, "ReplicaSet"):
                continue
            uid = controller_uid(pod)
            if uid in pods:
                pods[uid].append(pod)
            elif not deleting(pod):
                self.objs.delete(self.objs.pods, pod)
        for uid, rs in owners.items():
            if not deleting(rs):
                self._sync(rs, pods[uid])
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
        if {k: (rs.get("status") or {}).get(k) for k in status} != status:
            self.objs.mutate(
                self.objs.replicasets,
                rs,
                lambda r: r.setdefault("status", {}).update(status),
                status=True,
            )
