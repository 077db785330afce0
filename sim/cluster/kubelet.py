"""The kubelet of every node: node readiness, starting bound pods, ending terminating ones after
their (scaled) grace period, reporting mounted volumes, and keeping mirror pods.

Only nodes that are Ready have a working kubelet: pods bound to any other node neither start nor
finish terminating, as on a machine whose kubelet is down.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.loop import Deadlines
from kubetrio.sim.cluster.objects import (
    Change,
    Key,
    Obj,
    Objects,
    condition,
    deleting,
    node_name,
    set_condition,
    set_kubelet_ready,
)
from kubetrio.sim.cluster.options import NEVER_READY_ANNOTATION, ClusterSimulation
from kubetrio.sim.cluster.volumes import CsiVolume, claim_names, pod_volumes

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_MANIFEST_DROPPED = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


@dataclass
class Kubelet:
    """Incremental: a pass visits the pods that changed, the pods on nodes that changed and the
    pods waiting on a timer, and reports ``volumesInUse`` for the nodes those of them naming a
    claim were or are on (a pod without one adds no volume to its node) and for the nodes that
    changed; a change to a claim, volume or attachment (rare, and any pod may depend on it), the
    first pass and a pass after a failed one visit everything. Each visited pod is decided
    exactly as a whole-cluster pass would decide it, in the same (key) order."""

    objs: Objects
    options: ClusterSimulation
    name: str = "kubelet"
    watches: frozenset[str] = frozenset(
        {
            "pods",
            "nodes",
            "persistentvolumeclaims",
            "persistentvolumes",
            "volumeattachments.storage.k8s.io",
        }
    )
    # Timers by pod key, with the uid they were started for (a pod recreated under the same
    # name starts afresh); dropped once the pod is gone or off a Ready node.
    _startable_since: dict[Key, tuple[str, float]] = field(default_factory=dict)
    _finish_at: dict[Key, tuple[str, float]] = field(default_factory=dict)
    _mirrors: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    _ips: int = 0
    _ready: set[str] = field(default_factory=set)
    # Noted by ``changed`` since the last pass.
    _full: bool = True
    _pods: set[Key] = field(default_factory=set)
    _nodes: set[str] = field(default_factory=set)
    _touched: set[str] = field(default_factory=set)  # nodes a changed pod was or is bound to
    _timed: set[Key] = field(default_factory=set)  # pods whose timer the last pass set

    def changed(self, rt: KindInfo, ev: Change) -> None:
        obj = ev.obj
        md = obj["metadata"]
        if rt.group_resource == "pods":
            self._pods.add((md.get("namespace", ""), md["name"]))
            if claim_names(obj):
                self._touched.add(node_name(obj))
            if ev.prev is not None and claim_names(ev.prev):
                self._touched.add(node_name(ev.prev))
        elif rt.group_resource == "nodes":
            self._nodes.add(md["name"])
        else:
            self._full = True

    def reconcile(self, now: float) -> float | None:
        full, self._full = self._full, False
        pods, self._pods = self._pods, set()
        nodes, self._nodes = self._nodes, set()
        touched, self._touched = self._touched, set()
        timed, self._timed = self._timed, set()
        try:
            if full:
                return self._pass(now, None, None, None)
            return self._pass(now, pods | timed, nodes, touched | nodes)
        except Exception:
            self._full = True  # what this pass took is lost: the next one looks at everything
            raise

    def _pass(
        self,
        now: float,
        pods: set[Key] | None,
        nodes: set[str] | None,
        touched: set[str] | None,
    ) -> float | None:
        """``None`` for all three: every node and pod."""
        deadlines = Deadlines()
        ready = self._ready_nodes(nodes)
        if pods is None or nodes is None or touched is None:
            entries: list[tuple[Key, Obj | None]] = [
                (self._key(p), p) for p in self.objs.all(self.objs.pods)
            ]
            visit = entries
            report = set(ready)
            for gone in (self._startable_since, self._finish_at):
                for key in set(gone) - {k for k, _ in entries}:
                    del gone[key]
        else:
            for node in nodes:
                pods |= self.objs.pods_on(node)
            visit = [(k, self.objs.get(self.objs.pods, *k)) for k in sorted(pods)]
            report = touched & ready
        in_use = {node: self._in_use(node) for node in report}
        for key, pod in visit:
            node = node_name(pod) if pod is not None else ""
            # A pod the server has not confirmed yet (no uid) is not there for a kubelet.
            if pod is None or node not in ready or not pod["metadata"].get("uid"):
                self._startable_since.pop(key, None)
                self._finish_at.pop(key, None)
                continue
            if self._mirror(node, pod):
                continue
            uid = str(pod["metadata"]["uid"])
            vols, complete = pod_volumes(self.objs, pod)
            phase = (pod.get("status") or {}).get("phase", "Pending")
            if deleting(pod):
                self._terminate(pod, key, uid, now, deadlines)
            elif phase == "Pending" and complete and self._attached(node, vols):
                since = self._timer(self._startable_since, key, uid, now)
                if now >= since + self.options.pod_start_delay:
                    self._start(pod)
                else:
                    deadlines.add(since + self.options.pod_start_delay)
                    self._timed.add(key)
            elif phase == "Running" and condition(pod, "Ready") != "True":
                self._ready_again(pod)
        for node, names in in_use.items():
            self._report_in_use(node, sorted(names))
        self._recreate_mirrors(ready)
        return deadlines.next

    @staticmethod
    def _key(pod: Obj) -> Key:
        md = pod["metadata"]
        return (md.get("namespace", ""), md["name"])

    @staticmethod
    def _timer(timers: dict[Key, tuple[str, float]], key: Key, uid: str, at: float) -> float:
        """The pod's timer, started at ``at`` unless it already runs for this uid."""
        held = timers.get(key)
        if held is None or held[0] != uid:
            timers[key] = held = (uid, at)
        return held[1]

    def _in_use(self, node: str) -> set[str]:
        """The CSI volumes of the node's Running pods (mirror pods mount none)."""
        names: set[str] = set()
        for key in self.objs.pods_on(node):
            pod = self.objs.get(self.objs.pods, *key)
            if pod is None or MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
                continue
            if (pod.get("status") or {}).get("phase", "Pending") == "Running":
                names.update(v.unique_name for v in pod_volumes(self.objs, pod)[0])
        return names

    # -- nodes

    def _ready_nodes(self, changed: set[str] | None) -> set[str]:
        """The nodes with a working kubelet, re-read for ``changed`` (None: every node)."""
        if changed is None:
            self._ready.clear()
            nodes = list(self.objs.all(self.objs.nodes))
        else:
            self._ready -= changed
            nodes = [n for n in map(self._node, sorted(changed)) if n is not None]
        for node in nodes:
            annotations = node["metadata"].get("annotations") or {}
            if not condition(node, "Ready") and annotations.get(NEVER_READY_ANNOTATION) != "true":
                node = self._post_ready(node)
            if condition(node, "Ready") == "True" and not deleting(node):
                self._ready.add(node["metadata"]["name"])
        return self._ready

    def _node(self, name: str) -> Obj | None:
        return self.objs.get(self.objs.nodes, "", name)

    def _post_ready(self, node: Obj) -> Obj:
        """A registered node whose kubelet has not reported yet: it reports Ready."""
        now = self.objs.now_rfc3339()

        def change(n: Obj) -> None:
            set_kubelet_ready(n, now)

        return self.objs.mutate(self.objs.nodes, node, change, status=True) or node

    def _report_in_use(self, node: str, names: list[str]) -> None:
        obj = self.objs.get(self.objs.nodes, "", node)
        if obj is None or (obj.get("status") or {}).get("volumesInUse", []) == names:
            return

        def change(n: Obj) -> None:
            st = n.setdefault("status", {})
            if names:
                st["volumesInUse"] = names
            else:
                st.pop("volumesInUse", None)

        self.objs.mutate(self.objs.nodes, obj, change, status=True)

    # -- pods

    def _attached(self, node: str, vols: list[CsiVolume]) -> bool:
        if not self.options.attach_detach:
            return True
        for vol in vols:
            va = self.objs.get(self.objs.attachments, "", vol.attachment_name(node))
            if va is None or not (va.get("status") or {}).get("attached"):
                return False
        return True

    def _start(self, pod: Obj) -> None:
        self._ips += 1
        ip = f"10.244.{self._ips // 250}.{self._ips % 250 + 1}"
        now = self.objs.now_rfc3339()

        def change(p: Obj) -> None:
            st = p.setdefault("status", {})
            st.update(phase="Running", podIP=ip, podIPs=[{"ip": ip}], startTime=now)
            st.setdefault("qosClass", "BestEffort")
            for type_ in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
                set_condition(p, type_, "True", "", now)
            set_condition(p, "PodScheduled", "True", "", now)
            for c in st["conditions"]:
                if not c.get("reason"):
                    c.pop("reason", None)
            st["containerStatuses"] = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "containerID": f"sim://{p['metadata']['uid']}/{c.get('name', '')}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
                for c in (p.get("spec") or {}).get("containers") or []
                if isinstance(c, dict)
            ]

        self.objs.mutate(self.objs.pods, pod, change, status=True)

    def _ready_again(self, pod: Obj) -> None:
        """The node was not Ready for a while (its pods were marked not Ready); now it is."""
        now = self.objs.now_rfc3339()

        def change(p: Obj) -> None:
            for type_ in ("ContainersReady", "Ready"):
                set_condition(p, type_, "True", "", now)
                for c in p["status"]["conditions"]:
                    if c.get("type") == type_:
                        c.pop("reason", None)

        self.objs.mutate(self.objs.pods, pod, change, status=True)

    def _terminate(self, pod: Obj, key: Key, uid: str, now: float, deadlines: Deadlines) -> None:
        """Finish after grace times ``grace_factor``; a shorter grace on a second delete wins."""
        grace = pod["metadata"].get("deletionGracePeriodSeconds") or 0
        at = now + float(grace) * self.options.grace_factor
        at = min(at, self._timer(self._finish_at, key, uid, at))
        self._finish_at[key] = (uid, at)
        if now >= at:
            if pod["metadata"].get("deletionGracePeriodSeconds") != 0:
                self.objs.delete(self.objs.pods, pod, grace=0)
        else:
            deadlines.add(at)
            self._timed.add(key)

    # -- mirror pods

    def _mirror(self, node: str, pod: Obj) -> bool:
        """A mirror pod stands for a static pod the kubelet runs from a file: deleting it
        through the API does not stop the pod, and the kubelet posts it again."""
        md = pod["metadata"]
        if MIRROR_ANNOTATION not in (md.get("annotations") or {}):
            return False
        key = (node, md.get("namespace", ""), md["name"])
        if deleting(pod):
            self.objs.delete(self.objs.pods, pod, grace=0)
            return True
        if key not in self._mirrors:
            manifest = copy.deepcopy(pod)
            manifest.pop("status", None)
            for f in _MANIFEST_DROPPED:
                manifest["metadata"].pop(f, None)
            self._mirrors[key] = manifest
        if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            self._start(pod)
        return True

    def _recreate_mirrors(self, ready: set[str]) -> None:
        for key, manifest in list(self._mirrors.items()):
            node, ns, name = key
            if self._node(node) is None:
                del self._mirrors[key]
            elif node in ready and self.objs.get(self.objs.pods, ns, name) is None:
                self.objs.create(self.objs.pods, ns, copy.deepcopy(manifest))
