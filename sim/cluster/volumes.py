"""From a pod to the CSI volumes it needs on its node: claim → bound volume → driver and handle,
named the way the attach/detach controller and the kubelet name them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kubetrio.sim.cluster.objects import Obj, Objects


@dataclass(frozen=True, slots=True)
class CsiVolume:
    pv: str
    driver: str
    handle: str

    @property
    def unique_name(self) -> str:
        """The name in ``node.status.volumesAttached`` / ``volumesInUse``."""
        return f"kubernetes.io/csi/{self.driver}^{self.handle}"

    def attachment_name(self, node: str) -> str:
        """The VolumeAttachment name the attach/detach controller derives
        (``csi-<sha256(handle+driver+node)>``), so each (volume, node) has exactly one."""
        digest = hashlib.sha256(f"{self.handle}{self.driver}{node}".encode()).hexdigest()
        return f"csi-{digest}"


def pv_volume(pv: Obj) -> CsiVolume | None:
    csi = (pv.get("spec") or {}).get("csi")
    if not isinstance(csi, dict) or not csi.get("driver") or not csi.get("volumeHandle"):
        return None
    return CsiVolume(pv["metadata"]["name"], str(csi["driver"]), str(csi["volumeHandle"]))


def claim_names(pod: Obj) -> list[str]:
    out: list[str] = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        claim = v.get("persistentVolumeClaim") if isinstance(v, dict) else None
        if isinstance(claim, dict) and claim.get("claimName"):
            out.append(str(claim["claimName"]))
    return out


def pod_volumes(objs: Objects, pod: Obj) -> tuple[list[CsiVolume], bool]:
    """The pod's CSI volumes, and whether every claim it names is bound to an existing volume
    (a pod with an unbound claim cannot start)."""
    ns = pod["metadata"].get("namespace", "")
    out: list[CsiVolume] = []
    complete = True
    for claim in claim_names(pod):
        pvc = objs.get(objs.pvcs, ns, claim)
        pv_name = (pvc.get("spec") or {}).get("volumeName") if pvc else None
        pv = objs.get(objs.pvs, "", str(pv_name)) if pv_name else None
        if pv is None:
            complete = False
            continue
        vol = pv_volume(pv)
        if vol is not None:
            out.append(vol)
    return out, complete
