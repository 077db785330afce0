"""A dynamic provisioner and the PV controller's binding: a pending claim of a served storage
class gets a new CSI PersistentVolume (``pvc-<claim uid>``, handle ``vol-<claim uid>``) and both
are Bound; a provisioned volume whose claim is gone is deleted (reclaim policy Delete)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrio.sim.cluster.objects import Obj, Objects, deleting
from kubetrio.sim.cluster.options import ClusterSimulation

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


@dataclass
class Provisioner:
    objs: Objects
    options: ClusterSimulation
    name: str = "provisioner"
    watches: frozenset[str] = frozenset({"persistentvolumeclaims", "persistentvolumes"})

    def reconcile(self, now: float) -> float | None:
        claims: set[str] = set()
        for pvc in self.objs.all(self.objs.pvcs):
            if not pvc["metadata"].get("uid"):
                continue  # not confirmed by the server yet: nothing can be bound to it
            claims.add(str(pvc["metadata"]["uid"]))
            if deleting(pvc):
                continue
            volume = (pvc.get("spec") or {}).get("volumeName")
            if volume:
                pv = self.objs.get(self.objs.pvs, "", str(volume))
                if pv is not None:
                    self._bind(pvc, pv)
            elif str((pvc.get("spec") or {}).get("storageClassName") or "") in (
                self.options.storage_classes
            ):
                pv = self.objs.create(self.objs.pvs, "", self._volume(pvc))
                if pv is not None:
                    self._bind(pvc, pv)
        for pv in self.objs.all(self.objs.pvs):
            spec = pv.get("spec") or {}
            ref = spec.get("claimRef") or {}
            if (
                (pv["metadata"].get("annotations") or {}).get(PROVISIONED_BY)
                == self.options.csi_driver
                and spec.get("persistentVolumeReclaimPolicy") == "Delete"
                and ref.get("uid")
                and ref["uid"] not in claims
            ):
                self.objs.delete(self.objs.pvs, pv)
        return None

    def _volume(self, pvc: Obj) -> Obj:
        md = pvc["metadata"]
        spec = pvc.get("spec") or {}
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"pvc-{md['uid']}",
                "annotations": {PROVISIONED_BY: self.options.csi_driver},
            },
            "spec": {
                "capacity": {"storage": size},
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": spec.get("storageClassName") or "",
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": md.get("namespace", ""),
                    "name": md["name"],
                    "uid": md["uid"],
                },
                "csi": {
                    "driver": self.options.csi_driver,
                    "volumeHandle": f"vol-{md['uid']}",
                    "fsType": "ext4",
                },
            },
        }

    def _bind(self, pvc: Obj, pv: Obj) -> None:
        pv_name = pv["metadata"]["name"]
        if (pv.get("status") or {}).get("phase") != "Bound":
            self.objs.mutate(
                self.objs.pvs, pv, lambda v: v.update(status={"phase": "Bound"}), status=True
            )
        if (pvc.get("spec") or {}).get("volumeName") != pv_name:

            def claim(c: Obj) -> None:
                c.setdefault("spec", {})["volumeName"] = pv_name
                annotations = c["metadata"].setdefault("annotations", {})
                annotations["pv.kubernetes.io/bind-completed"] = "yes"
                annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
                annotations["volume.kubernetes.io/storage-provisioner"] = self.options.csi_driver

            pvc = self.objs.mutate(self.objs.pvcs, pvc, claim) or pvc
        if (pvc.get("status") or {}).get("phase") != "Bound":
            pv_spec = pv.get("spec") or {}
            status = {
                "phase": "Bound",
                "accessModes": pv_spec.get("accessModes") or ["ReadWriteOnce"],
                "capacity": pv_spec.get("capacity") or {},
            }
            self.objs.mutate(self.objs.pvcs, pvc, lambda c: c.update(status=status), status=True)
