"""The kubelet of every node: node readiness, starting bound pods, ending terminating ones after
their (scaled) grace period, reporting mounted volumes, and keeping mirror pods.

Only nodes that are Ready have a working kubelet: pods bound to any other node neither start nor
finish terminating, as on a machine whose kubelet is down.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from kubetrio.runtime.emulator.cluster.loop import Deadlines
from kubetrio.runtime.emulator.cluster.objects import (
    Obj,
    Objects,
    condition,
    deleting,
    node_name,
    set_condition,
)
from kubetrio.runtime.emulator.cluster.options import NEVER_READY_ANNOTATION, ClusterSimulation
from kubetrio.runtime.emulator.cluster.volumes import CsiVolume, pod_volumes

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
    _startable_since: dict[str, float] = field(default_factory=dict)
    _finish_at: dict[str, float] = field(default_factory=dict)
    _mirrors: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    _ips: int = 0

    def reconcile(self, now: float) -> float | None:
        deadlines = Deadlines()
        ready = self._ready_nodes()
        in_use: dict[str, set[str]] = {n: set() for n in ready}
        seen: set[str] = set()
        for pod in self.objs.all(self.objs.pods):
            node = node_name(pod)
            if node not in ready:
                continue
            uid = str(pod["metadata"]["uid"])
            seen.add(uid)
            if self._mirror(node, pod):
                continue
            vols, complete = pod_volumes(self.objs, pod)
            phase = (pod.get("status") or {}).get("phase", "Pending")
            if phase == "Running":
                in_use[node].update(v.unique_name for v in vols)
            if deleting(pod):
                self._terminate(pod, uid, now, deadlines)
            elif phase == "Pending" and complete and self._attached(node, vols):
                since = self._startable_since.setdefault(uid, now)
                if now >= since + self.options.pod_start_delay:
                    self._start(pod)
                else:
                    deadlines.add(since + self.options.pod_start_delay)
            elif phase == "Running" and condition(pod, "Ready") != "True":
                self._ready_again(pod)
        for stale in set(self._startable_since) - seen:
            del self._startable_since[stale]
        for stale in set(self._finish_at) - seen:
            del self._finish_at[stale]
        for node, names in in_use.items():
            self._report_in_use(node, sorted(names))
        self._recreate_mirrors(ready)
        return deadlines.next

    # -- nodes

    def _ready_nodes(self) -> set[str]:
        ready: set[str] = set()
        for node in self.objs.all(self.objs.nodes):
            annotations = node["metadata"].get("annotations") or {}
            if not condition(node, "Ready") and annotations.get(NEVER_READY_ANNOTATION) != "true":
                node = self._post_ready(node)
            if condition(node, "Ready") == "True" and not deleting(node):
                ready.add(node["metadata"]["name"])
        return ready

    def _post_ready(self, node: Obj) -> Obj:
        """A registered node whose kubelet has not reported yet: it reports Ready."""
        now = self.objs.clock.now_rfc3339()

        def change(n: Obj) -> None:
            set_condition(
                n,
                "Ready",
                "True",
                "KubeletReady",
                now,
                message="kubelet is posting ready status",
                lastHeartbeatTime=now,
            )

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
        now = self.objs.clock.now_rfc3339()

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
        now = self.objs.clock.now_rfc3339()

        def change(p: Obj) -> None:
            for type_ in ("ContainersReady", "Ready"):
                set_condition(p, type_, "True", "", now)
                for c in p["status"]["conditions"]:
                    if c.get("type") == type_:
                        c.pop("reason", None)

        self.objs.mutate(self.objs.pods, pod, change, status=True)

    def _terminate(self, pod: Obj, uid: str, now: float, deadlines: Deadlines) -> None:
        """Finish after grace times ``grace_factor``; a shorter grace on a second delete wins."""
        grace = pod["metadata"].get("deletionGracePeriodSeconds") or 0
        at = now + float(grace) * self.options.grace_factor
        at = min(at, self._finish_at.get(uid, at))
        self._finish_at[uid] = at
        if now >= at:
            if pod["metadata"].get("deletionGracePeriodSeconds") != 0:
                self.objs.delete(self.objs.pods, pod, grace=0)
        else:
            deadlines.add(at)

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
        nodes = {n["metadata"]["name"] for n in self.objs.all(self.objs.nodes)}
        for key, manifest in list(self._mirrors.items()):
            node, ns, name = key
            if node not in nodes:
                del self._mirrors[key]
            elif node in ready and self.objs.get(self.objs.pods, ns, name) is None:
                self.objs.create(self.objs.pods, ns, copy.deepcopy(manifest))
