"""Indexes the simulated cluster keeps current from store events, so a simulated controller's
pass visits the objects a change concerns instead of every pod in the cluster: the pods each
node holds, the objects each owner controls, and which of an owner's pods count towards its
replicas (active) and are Ready, so a workload's status is two set sizes rather than a walk of
its pods.

Why: a level-triggered pass that reads the whole cluster costs O(pods) on every change, so a cluster
built one object at a time costs O(pods²) (``tests/bench/simcluster.py`` measures the cost per
change as the cluster grows). The cluster's store hook feeds one ``ClusterIndexes`` with every event
before any controller hears of it, and fills it from the store when the simulation starts, so the
index is exact whenever a pass reads it::

    indexes = ClusterIndexes()
    indexes.note("pods", pod, gone=False)       # bound to node-a, controlled by a ReplicaSet
    indexes.pods_by_node.keys("node-a")         # {("default", "web-0")}
    indexes.controlled["pods"].keys(rs_uid)     # {("default", "web-0")}
    indexes.active_pods.keys(rs_uid)            # the same, unless it is deleting or finished
    indexes.ready_pods.keys(rs_uid)             # those of them Running and Ready
"""

from __future__ import annotations

from typing import Final

from kubetrio.sim.cluster.objects import Key, Obj, active, controller_uid, node_name, pod_ready

# The children ``owners_with_children`` looks up by owner (ReplicaSets' and StatefulSets' and
# DaemonSets' pods, Deployments' ReplicaSets).
CONTROLLED: Final = frozenset({"pods", "replicasets.apps"})


class ReverseIndex:
    """Each key's one value ("" for none), and the keys holding each value."""

    def __init__(self) -> None:
        self._keys: dict[str, set[Key]] = {}
        self._value_of: dict[Key, str] = {}

    def put(self, key: Key, value: str) -> None:
        """``key`` now holds ``value`` ("" when it holds none, or is gone)."""
        old = self._value_of.get(key, "")
        if old == value:
            return
        if old:
            keys = self._keys[old]
            keys.discard(key)
            if not keys:
                del self._keys[old]
            del self._value_of[key]
        if value:
            self._keys.setdefault(value, set()).add(key)
            self._value_of[key] = value

    def keys(self, value: str) -> set[Key]:
        return self._keys.get(value, set())


class ClusterIndexes:
    """Pods by ``spec.nodeName`` (unbound pods are not indexed), the objects of each
    ``CONTROLLED`` resource by the uid of their controlling owner, and the active pods and the
    active Ready pods by that uid."""

    def __init__(self) -> None:
        self.pods_by_node = ReverseIndex()
        self.controlled = {resource: ReverseIndex() for resource in CONTROLLED}
        self.active_pods = ReverseIndex()
        self.ready_pods = ReverseIndex()

    def note(self, resource: str, obj: Obj, gone: bool) -> None:
        """A committed change to ``obj`` (a store key's resource); other resources are ignored."""
        by_owner = self.controlled.get(resource)
        if by_owner is None:
            return
        md = obj["metadata"]
        key = (md.get("namespace", ""), md["name"])
        owner = "" if gone else controller_uid(obj)
        by_owner.put(key, owner)
        if resource == "pods":
            self.pods_by_node.put(key, "" if gone else node_name(obj))
            counted = owner if owner and active(obj) else ""
            self.active_pods.put(key, counted)
            self.ready_pods.put(key, counted if counted and pod_ready(obj) else "")
