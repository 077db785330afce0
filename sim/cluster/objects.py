"""Store access for the simulated controllers: typed lookups of the resources they touch and
writes that never raise into the loop.

Reads hand out the stored dicts themselves (cheap, and never mutated: every write goes through
``mutate``/``create``, which work on private copies). A write the API refuses (a namespace being
deleted, a name taken meanwhile) is logged and skipped: the next pass sees the new state and
decides again, as a real controller requeues.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Key, Store

if TYPE_CHECKING:  # indexes.py reads objects with this module's helpers
    from kubetrio.sim.cluster.indexes import ClusterIndexes, ReverseIndex

log = logging.getLogger("kubetrio.emulator.cluster")

Obj = dict[str, Any]


class Objects:
    def __init__(self, store: Store) -> None:
        self.store = store
        # Set and fed by the simulated cluster (its hook sees every event); None elsewhere.
        self.indexes: ClusterIndexes | None = None
        self.clock = store.clock
        self.pods = self._rt("", "v1", "pods")
        self.nodes = self._rt("", "v1", "nodes")
        self.pvcs = self._rt("", "v1", "persistentvolumeclaims")
        self.pvs = self._rt("", "v1", "persistentvolumes")
        self.attachments = self._rt("storage.k8s.io", "v1", "volumeattachments")
        self.pdbs = self._rt("policy", "v1", "poddisruptionbudgets")
        self.replicasets = self._rt("apps", "v1", "replicasets")
        self.statefulsets = self._rt("apps", "v1", "statefulsets")
        self.daemonsets = self._rt("apps", "v1", "daemonsets")
        self.deployments = self._rt("apps", "v1", "deployments")

    def _rt(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.store.types.lookup(group, version, plural)
        assert rt is not None, plural
        return rt

    # -- reads

    def pods_on(self, node: str) -> set[Key]:
        """Keys of the pods bound to ``node``, from the simulated cluster's index."""
        if self.indexes is None:
            raise RuntimeError("pods_on: only the simulated cluster keeps the pods-by-node index")
        return self.indexes.pods_by_node.keys(node)

    def all(self, rt: ResourceType, ns: str | None = None) -> Iterator[Obj]:
        for entry in list(self.store.iter(rt, ns)):
            yield entry.obj

    def get(self, rt: ResourceType, ns: str, name: str) -> Obj | None:
        entry = self.store.find(rt, ns, name)
        return entry.obj if entry is not None else None

    def by_uid(self, rt: ResourceType, ns: str, uid: str) -> Obj | None:
        return next((o for o in self.all(rt, ns) if o["metadata"].get("uid") == uid), None)

    # -- writes

    def create(self, rt: ResourceType, ns: str, obj: Obj) -> Obj | None:
        try:
            return self.store.create(rt, ns if rt.namespaced else "", obj).obj
        except ApiError as exc:
            log.info("simulated create refused kind=%s err=%s", rt.kind, exc)
            return None

    def mutate(
        self, rt: ResourceType, obj: Obj, change: Callable[[Obj], None], status: bool = False
    ) -> Obj | None:
        """Write ``change`` applied to a copy of ``obj``'s current version (a no-op when it
        changes nothing: the store does not bump the resourceVersion)."""
        md = obj["metadata"]
        ns = md.get("namespace", "")
        entry = self.store.find(rt, ns, md["name"])
        if entry is None:
            return None
        new = entry.clone()
        change(new)
        try:
            return self.store.update(
                rt, ns, md["name"], new, subresource="status" if status else ""
            ).obj
        except ApiError as exc:
            log.info("simulated update refused kind=%s name=%s err=%s", rt.kind, md["name"], exc)
            return None

    def delete(self, rt: ResourceType, obj: Obj, grace: int | None = None) -> None:
        md = obj["metadata"]
        try:
            self.store.delete(rt, md.get("namespace", ""), md["name"], grace=grace)
        except ApiError as exc:
            if exc.code != 404:
                log.info(
                    "simulated delete refused kind=%s name=%s err=%s", rt.kind, md["name"], exc
                )


# -- small readers shared by the controllers


def condition(obj: Obj, type_: str) -> str:
    """The status ("True", "False", "Unknown") of a condition, "" when absent."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return str(c.get("status", ""))
    return ""


def set_condition(obj: Obj, type_: str, status: str, reason: str, now: str, **extra: str) -> None:
    """Upsert a condition; ``lastTransitionTime`` only moves when the status does."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == type_:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, **extra)
            return
    conditions.append(
        {"type": type_, "status": status, "reason": reason, "lastTransitionTime": now, **extra}
    )


def set_kubelet_ready(node: Obj, now: str) -> None:
    """The Ready condition a kubelet posts when its node is healthy, heartbeat ``now``."""
    set_condition(
        node,
        "Ready",
        "True",
        "KubeletReady",
        now,
        message="kubelet is posting ready status",
        lastHeartbeatTime=now,
    )


def deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def pod_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition(pod, "Ready") == "True"


def controller_uid(obj: Obj) -> str:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


def owned_by_kind(obj: Obj, kind: str) -> bool:
    return any(
        isinstance(r, dict) and r.get("controller") and r.get("kind") == kind
        for r in obj["metadata"].get("ownerReferences") or []
    )


def owners_with_children(
    objs: Objects, owners: ResourceType, children: ResourceType, kind: str
) -> list[tuple[Obj, list[Obj]]]:
    """Each live owner with the children it controls. Children whose owner is gone are left to
    the garbage collector, as in a real cluster. With the ``controlled`` index: each owner's
    children only (same lists, in the same key order), not every child in the cluster."""
    by_uid = {str(o["metadata"]["uid"]): o for o in objs.all(owners)}
    index = objs.indexes.controlled.get(children.key) if objs.indexes is not None else None
    if index is not None:
        return [
            (owner, [c for c in _children(objs, index, children, uid) if owned_by_kind(c, kind)])
            for uid, owner in by_uid.items()
            if not deleting(owner)
        ]
    owned: dict[str, list[Obj]] = {uid: [] for uid in by_uid}
    for child in objs.all(children):
        if not owned_by_kind(child, kind):
            continue
        uid = controller_uid(child)
        if uid in owned:
            owned[uid].append(child)
    return [(owner, owned[uid]) for uid, owner in by_uid.items() if not deleting(owner)]


def _children(objs: Objects, index: ReverseIndex, children: ResourceType, uid: str) -> list[Obj]:
    found = (objs.get(children, *key) for key in sorted(index.keys(uid)))
    return [c for c in found if c is not None]


def owner_ref(owner: Obj) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
