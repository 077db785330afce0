"""The attach/detach controller with a CSI attacher behind it: a VolumeAttachment per (volume,
node) a scheduled pod needs, ``attached=true`` after ``attach_delay``, mirrored into
``node.status.volumesAttached``; once no pod on the node needs the volume, it is detached
``detach_delay`` later (node status first, then the VolumeAttachment goes).

Volumes are single-attach: a volume still attached to another node is not attached to a new one
until it has detached there (the real controller's Multi-Attach wait), which is what lets a drain
watch "detached from the old node, then attached on the new one".

A pass reads only the pods that name a claim (the others need no volume, whatever else
changes), every VolumeAttachment, and reports ``volumesAttached`` for the nodes whose report
could have changed: those a VolumeAttachment targets or targeted, and those that changed
themselves; a change to a claim or volume, the first pass and one after a failed pass report
every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.loop import Deadlines
from kubetrio.sim.cluster.objects import Change, Key, Obj, Objects, node_name
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.volumes import (
    CsiVolume,
    claim_names,
    pod_volumes,
    pv_volume,
)


def _target(va: Obj) -> tuple[str, str]:
    spec = va.get("spec") or {}
    return str(spec.get("nodeName", "")), str(
        (spec.get("source") or {}).get("persistentVolumeName", "")
    )


@dataclass
class AttachDetach:
    objs: Objects
    options: ClusterSimulation
    name: str = "attach-detach"
    watches: frozenset[str] = frozenset(
        {
            "pods",
            "nodes",
            "persistentvolumeclaims",
            "persistentvolumes",
            "volumeattachments.storage.k8s.io",
        }
    )
    _attach_at: dict[str, float] = field(default_factory=dict)
    _detach_at: dict[str, float] = field(default_factory=dict)
    _names: dict[str, str] = field(default_factory=dict)  # attachment → unique volume name
    _with_claims: set[Key] = field(default_factory=set)  # pods naming a claim, from ``changed``
    _claims_known: bool = False  # ``_with_claims`` filled from the store
    # Noted by ``changed`` since the last pass.
    _full: bool = True
    _nodes: set[str] = field(default_factory=set)

    def changed(self, rt: KindInfo, ev: Change) -> None:
        obj = ev.obj
        md = obj["metadata"]
        if rt.group_resource == "pods":
            key = (md.get("namespace", ""), md["name"])
            if ev.type != "DELETED" and claim_names(obj):
                self._with_claims.add(key)
            else:
                self._with_claims.discard(key)
        elif rt.group_resource == "nodes":
            self._nodes.add(md["name"])
        elif rt.group_resource == "volumeattachments.storage.k8s.io":
            self._nodes.add(_target(obj)[0])
            if ev.prev is not None:
                self._nodes.add(_target(ev.prev)[0])
        else:
            self._full = True

    def reconcile(self, now: float) -> float | None:
        full, self._full = self._full, False
        changed, self._nodes = self._nodes, set()
        try:
            return self._pass(now, None if full else changed)
        except Exception:
            self._full = True  # what this pass took is lost: the next one reports every node
            raise

    def _pass(self, now: float, changed: set[str] | None) -> float | None:
        """``changed``: the nodes to report besides those a VolumeAttachment targets (None:
        every node)."""
        deadlines = Deadlines()
        if not self._claims_known:
            self._with_claims = {
                (p["metadata"].get("namespace", ""), p["metadata"]["name"])
                for p in self.objs.all(self.objs.pods)
                if claim_names(p)
            }
            self._claims_known = True
        desired: dict[tuple[str, str], CsiVolume] = {}
        for key in sorted(self._with_claims):
            pod = self.objs.get(self.objs.pods, *key)
            if pod is None:
                continue
            node = node_name(pod)
            if self._node(node) is not None and (pod.get("status") or {}).get("phase") not in (
                "Succeeded",
                "Failed",
            ):
                for vol in pod_volumes(self.objs, pod)[0]:
                    desired[(node, vol.pv)] = vol
        existing: dict[tuple[str, str], Obj] = {}
        for va in self.objs.all(self.objs.attachments):
            name = va["metadata"]["name"]
            target = _target(va)
            if target in desired:
                self._detach_at.pop(name, None)
                existing[target] = va
                if not (va.get("status") or {}).get("attached"):
                    self._attach(va, now, deadlines)
            else:
                self._attach_at.pop(name, None)
                at = self._detach_at.setdefault(name, now + self.options.detach_delay)
                if now >= at:
                    self._detach(va)
                    if self.objs.get(self.objs.attachments, "", name) is not None:
                        existing[target] = va  # gone only once the server has the delete
                else:
                    existing[target] = va
                    deadlines.add(at)
        busy = {pv: node for node, pv in existing}
        for (node, pv), vol in sorted(desired.items()):
            if (node, pv) in existing or busy.get(pv, node) != node:
                continue  # attached already, or still attached elsewhere: wait for the detach
            created = self.objs.create(self.objs.attachments, "", self._new(vol, node))
            if created is not None:
                busy[pv] = node
                self._attach(created, now, deadlines)
        if changed is None:
            self._report({n["metadata"]["name"] for n in self.objs.all(self.objs.nodes)})
        else:
            targeted = {_target(va)[0] for va in self.objs.all(self.objs.attachments)}
            self._report({n for n in changed | targeted if self._node(n) is not None})
        return deadlines.next

    def _node(self, name: str) -> Obj | None:
        return self.objs.get(self.objs.nodes, "", name) if name else None

    def _new(self, vol: CsiVolume, node: str) -> Obj:
        name = vol.attachment_name(node)
        self._names[name] = vol.unique_name
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": name},
            "spec": {
                "attacher": vol.driver,
                "nodeName": node,
                "source": {"persistentVolumeName": vol.pv},
            },
            "status": {"attached": False},
        }

    def _attach(self, va: Obj, now: float, deadlines: Deadlines) -> None:
        name = va["metadata"]["name"]
        at = self._attach_at.setdefault(name, now + self.options.attach_delay)
        if now < at:
            deadlines.add(at)
            return
        del self._attach_at[name]
        self.objs.mutate(
            self.objs.attachments,
            va,
            lambda v: v.setdefault("status", {}).update(attached=True),
            status=True,
        )

    def _detach(self, va: Obj) -> None:
        name = va["metadata"]["name"]
        del self._detach_at[name]
        node = _target(va)[0]
        self.objs.delete(self.objs.attachments, va)
        self._report({node})
        self._names.pop(name, None)

    def _unique_name(self, va: Obj) -> str:
        name = va["metadata"]["name"]
        if name not in self._names:
            pv = self.objs.get(self.objs.pvs, "", _target(va)[1])
            vol = pv_volume(pv) if pv is not None else None
            if vol is None:
                return ""
            self._names[name] = vol.unique_name
        return self._names[name]

    def _report(self, nodes: set[str]) -> None:
        """``node.status.volumesAttached`` = the node's attached VolumeAttachments."""
        attached: dict[str, set[str]] = {n: set() for n in nodes}
        for va in self.objs.all(self.objs.attachments):
            node = _target(va)[0]
            if node in attached and (va.get("status") or {}).get("attached"):
                unique = self._unique_name(va)
                if unique:
                    attached[node].add(unique)
        for node, names in attached.items():
            want = [{"name": n, "devicePath": ""} for n in sorted(names)]
            obj = self.objs.get(self.objs.nodes, "", node)
            if obj is None or (obj.get("status") or {}).get("volumesAttached", []) == want:
                continue

            def change(n: Obj, want: list[dict[str, str]] = want) -> None:
                st = n.setdefault("status", {})
                if want:
                    st["volumesAttached"] = want
                else:
                    st.pop("volumesAttached", None)

            self.objs.mutate(self.objs.nodes, obj, change, status=True)
