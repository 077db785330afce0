"""The ReplicaSet controller: as many active pods as ``spec.replicas`` (a deleted pod is replaced
at once, under a new name), surplus pods deleted not-ready first, status counts kept current.
Pods whose ReplicaSet is gone are the garbage collector's (``gc.collector``).

Incremental: a pass visits the ReplicaSets that changed and those whose pods changed, and reads
a set's active and Ready pod counts from the cluster's indexes (``ClusterIndexes``), so one more
pod costs the same beside ten pods or ten thousand. Only scaling down reads the set's pods. The
first pass, and one after a failed pass, visit every ReplicaSet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.indexes import ClusterIndexes
from kubetrio.sim.cluster.objects import (
    Change,
    Key,
    Obj,
    Objects,
    controller_uid,
    deleting,
    key_of,
    node_name,
    owned_by_kind,
    pod_ready,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.templates import (
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
    _by_uid: dict[str, Key] = field(default_factory=dict)  # each known ReplicaSet's key
    # Noted by ``changed`` since the last pass.
    _full: bool = True
    _owners: set[str] = field(default_factory=set)  # uids of the sets to visit

    def changed(self, rt: KindInfo, ev: Change) -> None:
        if rt.group_resource == "pods":
            self._owners.add(controller_uid(ev.obj))
            if ev.prev is not None:
                self._owners.add(controller_uid(ev.prev))
            return
        uid = str(ev.obj["metadata"].get("uid") or "")
        if not uid:
            return  # not confirmed by the server yet: it owns nothing yet
        if ev.type == "DELETED":
            self._by_uid.pop(uid, None)
        else:
            self._by_uid[uid] = key_of(ev.obj)
            self._owners.add(uid)

    def reconcile(self, now: float) -> float | None:
        full, self._full = self._full, False
        owners, self._owners = self._owners, set()
        try:
            if full:
                sets = list(self.objs.all(self.objs.replicasets))
                self._by_uid = {
                    str(rs["metadata"]["uid"]): key_of(rs)
                    for rs in sets
                    if rs["metadata"].get("uid")
                }
            else:
                found = (self._set(uid) for uid in sorted(owners) if uid)
                sets = [rs for rs in found if rs is not None]
            for rs in sets:
                if rs["metadata"].get("uid") and not deleting(rs):
                    self._sync(rs)
        except Exception:
            self._full = True  # what this pass took is lost: the next one visits every set
            raise
        return None

    def _set(self, uid: str) -> Obj | None:
        key = self._by_uid.get(uid)
        rs = self.objs.get(self.objs.replicasets, *key) if key is not None else None
        return rs if rs is not None and rs["metadata"].get("uid") == uid else None

    def _indexes(self) -> ClusterIndexes:
        if self.objs.indexes is None:
            raise RuntimeError("replicaset: only the simulated cluster keeps the pod indexes")
        return self.objs.indexes

    def _sync(self, rs: Obj) -> None:
        indexes = self._indexes()
        uid = str(rs["metadata"]["uid"])
        want = replicas(rs)
        ns = rs["metadata"].get("namespace", "default")
        live = len(indexes.active_pods.keys(uid))
        for _ in range(want - live):
            # The created pod is indexed as it shows, so the counts below include it.
            self.objs.create(
                self.objs.pods,
                ns,
                pod_from_template(rs, generateName=f"{rs['metadata']['name']}-"),
            )
        live = len(indexes.active_pods.keys(uid))
        ready = len(indexes.ready_pods.keys(uid))
        if live > want:
            live, ready = self._scale_down(rs, uid, want)
        status = {
            "replicas": live,
            "fullyLabeledReplicas": live,
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

    def _scale_down(self, rs: Obj, uid: str, want: int) -> tuple[int, int]:
        """Delete the surplus; the active and Ready counts of the pods kept."""
        found = (
            self.objs.get(self.objs.pods, *key)
            for key in sorted(self._indexes().active_pods.keys(uid))
        )
        live = [p for p in found if p is not None and owned_by_kind(p, "ReplicaSet")]
        # Unscheduled, then not ready, then newest go first (controller.ActivePods order).
        live.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True)
        live.sort(key=lambda p: (bool(node_name(p)), pod_ready(p)))
        surplus = max(0, len(live) - want)
        for pod in live[:surplus]:
            self.objs.delete(self.objs.pods, pod)
        kept = live[surplus:]
        return len(kept), ready_count(kept)
