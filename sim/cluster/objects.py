"""What the simulated controllers read and write: typed lookups of the resources they touch
and writes that never raise into the loop.

``ApiObjects`` (``kubetrio.sim.apiview``) implements it as a client of any API server, the
emulator's included: a watched mirror to read, writes sent behind the pass. A pass reads dicts
it must never mutate (every write works on a private copy), and a write the API refuses (a
namespace being deleted, a name taken meanwhile) is logged and skipped: the next pass sees the
new state and decides again, as a real controller requeues.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from kubetrio.api.registry import BUILTIN_KINDS, KindInfo

if TYPE_CHECKING:  # indexes.py reads objects with this module's helpers
    from kubetrio.sim.cluster.indexes import ClusterIndexes, ReverseIndex

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); "" for cluster-scoped


def builtin(api_version: str, plural: str) -> KindInfo:
    return next(k for k in BUILTIN_KINDS if k.api_version == api_version and k.plural == plural)


PODS = builtin("v1", "pods")
NODES = builtin("v1", "nodes")
PVCS = builtin("v1", "persistentvolumeclaims")
PVS = builtin("v1", "persistentvolumes")
ATTACHMENTS = builtin("storage.k8s.io/v1", "volumeattachments")
PDBS = builtin("policy/v1", "poddisruptionbudgets")
REPLICASETS = builtin("apps/v1", "replicasets")
STATEFULSETS = builtin("apps/v1", "statefulsets")
DAEMONSETS = builtin("apps/v1", "daemonsets")
DEPLOYMENTS = builtin("apps/v1", "deployments")
# Every resource the simulated world reads or writes.
RESOURCES: tuple[KindInfo, ...] = (
    PODS,
    NODES,
    PVCS,
    PVS,
    ATTACHMENTS,
    PDBS,
    REPLICASETS,
    STATEFULSETS,
    DAEMONSETS,
    DEPLOYMENTS,
)


@dataclass(frozen=True, slots=True)
class Change:
    """A committed change: ``type`` is ADDED, MODIFIED or DELETED; ``prev`` the object before
    (None for ADDED). Subscribers run inside the change: they only note it."""

    type: str
    obj: Obj
    prev: Obj | None = None


Subscriber = Callable[[KindInfo, Change], None]


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON-shaped object (what every read and write here holds), through
    msgspec's C encoder: several times cheaper than ``copy.deepcopy``, which was the largest
    single cost of a pass's writes."""
    copied: Obj = msgspec.msgpack.decode(msgspec.msgpack.encode(obj))
    return copied


def key_of(obj: Obj) -> Key:
    md = obj["metadata"]
    return (md.get("namespace", ""), md["name"])


class Objects(ABC):
    pods = PODS
    nodes = NODES
    pvcs = PVCS
    pvs = PVS
    attachments = ATTACHMENTS
    pdbs = PDBS
    replicasets = REPLICASETS
    statefulsets = STATEFULSETS
    daemonsets = DAEMONSETS
    deployments = DEPLOYMENTS

    def __init__(self) -> None:
        # Set and fed by the simulated cluster (it hears of every change); None elsewhere.
        self.indexes: ClusterIndexes | None = None

    async def ready(self) -> None:  # noqa: B027 - ready at once unless a backend waits
        """Return once reads see the whole cluster (at once for a store; after the first
        list of every resource for a client)."""

    # -- reads

    def pods_on(self, node: str) -> set[Key]:
        """Keys of the pods bound to ``node``, from the simulated cluster's index."""
        if self.indexes is None:
            raise RuntimeError("pods_on: only the simulated cluster keeps the pods-by-node index")
        return self.indexes.pods_by_node.keys(node)

    @abstractmethod
    def all(self, rt: KindInfo, ns: str | None = None) -> Iterator[Obj]: ...

    @abstractmethod
    def get(self, rt: KindInfo, ns: str, name: str) -> Obj | None: ...

    def by_uid(self, rt: KindInfo, ns: str, uid: str) -> Obj | None:
        return next((o for o in self.all(rt, ns) if o["metadata"].get("uid") == uid), None)

    @abstractmethod
    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` for every change from now on; returns the unsubscribe."""

    # -- time

    @abstractmethod
    def now(self) -> dt.datetime:
        """Wall time as the API server stamps it (on the trio clock)."""

    def now_rfc3339(self) -> str:
        return self.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- writes

    @abstractmethod
    def create(self, rt: KindInfo, ns: str, obj: Obj) -> Obj | None:
        """Create ``obj`` (in ``ns`` when namespaced); the object as this view now holds it,
        None when refused."""

    @abstractmethod
    def mutate(
        self, rt: KindInfo, obj: Obj, change: Callable[[Obj], None], status: bool = False
    ) -> Obj | None:
        """Write ``change`` applied to a copy of ``obj``'s current version (to its status
        subresource when ``status``); a no-op when it changes nothing. The object as this
        view now holds it, None when it is gone or the write was refused."""

    @abstractmethod
    def delete(self, rt: KindInfo, obj: Obj, grace: int | None = None) -> None: ...

    @abstractmethod
    def bind(self, pod: Obj, node: str) -> bool:
        """Assign ``pod`` to ``node`` as ``POST pods/{name}/binding`` does; False when refused
        at once (already bound)."""


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


def active(pod: Obj) -> bool:
    """Counts towards its controller's replicas: not being deleted, not finished."""
    return not deleting(pod) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


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
    objs: Objects, owners: KindInfo, children: KindInfo, kind: str
) -> list[tuple[Obj, list[Obj]]]:
    """Each live owner with the children it controls. Children whose owner is gone are left to
    the garbage collector, as in a real cluster. With the ``controlled`` index: each owner's
    children only (same lists, in the same key order), not every child in the cluster."""
    # An owner the server has not confirmed yet (no uid) cannot own anything yet.
    by_uid = {str(o["metadata"]["uid"]): o for o in objs.all(owners) if o["metadata"].get("uid")}
    index = (
        objs.indexes.controlled.get(children.group_resource) if objs.indexes is not None else None
    )
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


def _children(objs: Objects, index: ReverseIndex, children: KindInfo, uid: str) -> list[Obj]:
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
