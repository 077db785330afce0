"""The ``scale`` subresource, as kube-apiserver serves it for custom resources and for
Deployments, ReplicaSets and StatefulSets.

A CRD that declares ``subresources.scale`` gets an ``autoscaling/v1`` Scale view of each object:
``spec.replicas`` read from and written to ``specReplicasPath``, ``status.replicas`` read from
``statusReplicasPath`` and ``status.selector`` from ``labelSelectorPath``. The apps workloads'
Scale reads ``spec.replicas`` and ``status.replicas``, and shows ``spec.selector`` in its text
form (``app=web``). Writes through the
view change only the replicas of the object itself (``kubectl scale``, autoscalers), so they go
through the normal update path: generation, resourceVersion, admission and watch events alike.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.meta import check_type_meta
from kubetrio.emulator.patch import json_patch, merge_patch
from kubetrio.emulator.validation import labelselector

SCALE_API_VERSION = "autoscaling/v1"
SCALE_KIND = "Scale"


@dataclass(frozen=True, slots=True)
class ScalePaths:
    spec_replicas: tuple[str, ...]
    status_replicas: tuple[str, ...]
    label_selector: tuple[str, ...] | None
    # The selector at label_selector is a metav1.LabelSelector to show as text (built-ins),
    # not a string already (custom resources).
    structured_selector: bool = False


# The apps workloads' Scale: replicas and the pod selector, and strategic merge patches too.
WORKLOAD_PATHS = ScalePaths(
    ("spec", "replicas"), ("status", "replicas"), ("spec", "selector"), True
)


def paths_for(builtin: bool, crd: dict[str, Any] | None) -> ScalePaths:
    return WORKLOAD_PATHS if builtin else scale_paths(crd)


def scale_paths(crd: dict[str, Any] | None) -> ScalePaths:
    """The storage version's scale paths; the CRD's validation guarantees they are there."""
    for version in (crd or {}).get("spec", {}).get("versions") or []:
        if version.get("storage"):
            scale = (version.get("subresources") or {}).get("scale") or {}
            selector = scale.get("labelSelectorPath")
            return ScalePaths(
                _path(scale.get("specReplicasPath", ".spec.replicas")),
                _path(scale.get("statusReplicasPath", ".status.replicas")),
                _path(selector) if selector else None,
            )
    raise errors.no_such_resource()


def _path(json_path: str) -> tuple[str, ...]:
    return tuple(part for part in json_path.split(".") if part)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def to_scale(paths: ScalePaths, obj: dict[str, Any]) -> dict[str, Any]:
    """The Scale view of ``obj``: absent replicas read as 0, as the apiserver's NestedInt64."""
    md = obj.get("metadata") or {}
    meta = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in md}
    if "creationTimestamp" in md:
        meta["creationTimestamp"] = md["creationTimestamp"]
    spec_replicas = _get(obj, paths.spec_replicas)
    status: dict[str, Any] = {"replicas": _int(_get(obj, paths.status_replicas))}
    if paths.label_selector is not None:
        selector = _get(obj, paths.label_selector)
        if paths.structured_selector:
            selector = labelselector.text(selector)
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    return {
        "kind": SCALE_KIND,
        "apiVersion": SCALE_API_VERSION,
        "metadata": meta,
        "spec": {"replicas": _int(spec_replicas)} if _int(spec_replicas) else {},
        "status": status,
    }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def patched_scale(
    current: dict[str, Any], content_type: str, body: Any, strategic: bool = False
) -> dict[str, Any]:
    """The Scale after a merge or JSON patch (the patch types a custom resource's scale takes;
    a built-in's takes a strategic merge patch too, the same as a merge patch for a Scale)."""
    merge_types = ["application/merge-patch+json"]
    if strategic:
        merge_types.append("application/strategic-merge-patch+json")
    if content_type in merge_types:
        if not isinstance(body, dict):
            raise errors.bad_request("a JSON merge patch must be a JSON object")
        new = merge_patch(copy.deepcopy(current), body)
    elif content_type == "application/json-patch+json":
        new = json_patch(copy.deepcopy(current), body)
    else:
        raise errors.unsupported_media_type(content_type)
    if not isinstance(new, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    return new


def apply_scale(paths: ScalePaths, name: str, obj: dict[str, Any], scale: Any) -> dict[str, Any]:
    """``obj`` with the Scale's replicas written to the spec path; the Scale's resourceVersion
    and uid become the update's preconditions, as the apiserver's scale update does."""
    scale = check_type_meta(scale, (SCALE_API_VERSION,), SCALE_KIND)
    md = scale.get("metadata") if isinstance(scale.get("metadata"), dict) else {}
    if md.get("name") not in (None, name):
        raise errors.bad_request(
            f"the name of the object ({md.get('name')}) does not match the name on the URL ({name})"
        )
    spec = scale.get("spec") if isinstance(scale.get("spec"), dict) else {}
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.bad_request(
            f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{type(replicas).__name__} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if replicas < 0:
        raise errors.invalid(
            "autoscaling",
            SCALE_KIND,
            name,
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                )
            ],
        )
    new = copy.deepcopy(obj)
    target = new
    for part in paths.spec_replicas[:-1]:
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            raise errors.internal(f"{'.'.join(paths.spec_replicas)}: not an object path")
    target[paths.spec_replicas[-1]] = replicas
    new_md = new.setdefault("metadata", {})
    for key in ("resourceVersion", "uid"):
        if md.get(key):
            new_md[key] = md[key]
        else:
            new_md.pop(key, None)
    return new
