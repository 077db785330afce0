"""PersistentVolume and PersistentVolumeClaim rules: capacity, exactly one volume source,
access modes, reclaim policy, requested storage, and what may change once created."""

from __future__ import annotations

import re
from typing import Any

from kubetrio.emulator.validation import labelselector, names, objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
VOLUME_MODES = ["Block", "Filesystem"]
SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cephfs",
    "cinder",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")
SPEC_FROZEN = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName "
    "for bound claims"
)


def _positive(quantity: Any) -> bool:
    match = _NUMBER.match(str(quantity))
    return match is None or float(match.group(0)) > 0


def _access_modes(spec: Obj, causes: Causes, detail: str) -> None:
    modes = spec.get("accessModes")
    if not modes:
        causes.required("spec.accessModes", detail)
        return
    for mode in modes:
        if mode not in ACCESS_MODES:
            causes.unsupported("spec.accessModes", mode, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes")


def _volume_mode(spec: Obj, causes: Causes) -> None:
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.unsupported("spec.volumeMode", mode, VOLUME_MODES)


def pv(obj: Obj, causes: Causes) -> None:
    spec = obj.get("spec") or {}
    _access_modes(spec, causes, "")
    capacity = spec.get("capacity")
    if not capacity:
        causes.required("spec.capacity")
    if not isinstance(capacity, dict) or "storage" not in capacity or len(capacity) > 1:
        causes.unsupported("spec.capacity", capacity, ["storage"])
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        causes.unsupported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES)
    class_name = spec.get("storageClassName")
    if class_name:
        causes.extend("spec.storageClassName", class_name, names.dns_subdomain(class_name))
    given = [s for s in SOURCES if spec.get(s) is not None]
    if not given:
        causes.required("spec", "must specify a volume type")
    for extra in given[1:]:
        causes.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and not host_path.get("path"):
        causes.required("spec.hostPath.path")
    _volume_mode(spec, causes)


def pv_update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)
    pv(new, causes)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if any(spec.get(s) != old_spec.get(s) for s in SOURCES):
        causes.forbidden(
            "spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"
        )
    if spec.get("volumeMode") != old_spec.get("volumeMode"):
        causes.invalid("spec.volumeMode", spec.get("volumeMode"), "field is immutable")


def pvc(obj: Obj, causes: Causes) -> None:
    spec = obj.get("spec") or {}
    _access_modes(spec, causes, "at least 1 access mode is required")
    labelselector.validate(spec.get("selector"), "spec.selector", causes)
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        causes.required("spec.resources[storage]")
    elif not _positive(requests["storage"]):
        causes.invalid(
            "spec.resources[storage]", str(requests["storage"]), "must be greater than zero"
        )
    class_name = spec.get("storageClassName")
    if class_name:
        causes.extend("spec.storageClassName", class_name, names.dns_subdomain(class_name))
    _volume_mode(spec, causes)


def pvc_update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)
    pvc(new, causes)
    spec, old_spec = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = spec.get("volumeName")
    for each in (spec, old_spec):
        each.pop("volumeAttributesClassName", None)
        if not each.get("volumeName"):
            each.pop("volumeName", None)
    if (new.get("status") or {}).get("phase") == "Bound":
        for each in (spec, old_spec):
            resources = dict(each.get("resources") or {})
            resources.pop("requests", None)
            each["resources"] = resources
    if spec != old_spec:
        causes.forbidden("spec", SPEC_FROZEN)


RULES = {
    "persistentvolumes": (pv, pv_update, None),
    "persistentvolumeclaims": (pvc, pvc_update, None),
}
