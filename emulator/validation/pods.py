"""Pod rules: ValidatePod on create, ValidatePodUpdate on update (the spec valid again, and
only its few mutable fields changed), as kube-apiserver's pod strategy runs them."""

from __future__ import annotations

import difflib
import json
from typing import Any

from kubetrio.emulator.jsoncopy import json_copy
from kubetrio.emulator.qos import qos_class
from kubetrio.emulator.validation.causes import Causes
from kubetrio.emulator.validation.podspec import dict_at, is_int, list_at, validate_pod_spec

Obj = dict[str, Any]

_MUTABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def _spec_rules(pod: Obj, causes: Causes) -> None:
    spec = dict_at(pod, "spec")
    validate_pod_spec(spec, "spec", causes)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(list_at(spec, key)):
            image = c.get("image") if isinstance(c, dict) else None
            if isinstance(image, str) and image != image.strip():
                causes.invalid(
                    f"spec.{key}[{i}].image", image, "must not have leading or trailing whitespace"
                )


def validate_create(pod: Obj, causes: Causes) -> None:
    _spec_rules(pod, causes)


def validate_update(new: Obj, old: Obj, causes: Causes) -> None:
    _spec_rules(new, causes)
    spec, old_spec = dict_at(new, "spec"), dict_at(old, "spec")
    for key in ("containers", "initContainers"):
        if len(list_at(spec, key)) != len(list_at(old_spec, key)):
            causes.forbidden(f"spec.{key}", "pod updates may not add or remove containers")
            return
    old_deadline = old_spec.get("activeDeadlineSeconds")
    new_deadline = spec.get("activeDeadlineSeconds")
    if is_int(old_deadline):
        if new_deadline is None:
            causes.invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        elif is_int(new_deadline) and new_deadline > old_deadline:
            causes.invalid(
                "spec.activeDeadlineSeconds",
                new_deadline,
                "must be less than or equal to previous value",
            )
    _only_added_tolerations(list_at(spec, "tolerations"), list_at(old_spec, "tolerations"), causes)
    munged = json_copy(spec)
    for key in ("containers", "initContainers"):
        for c, was in zip(list_at(munged, key), list_at(old_spec, key), strict=True):
            if isinstance(c, dict) and isinstance(was, dict):
                if "image" in was:
                    c["image"] = was["image"]
                else:
                    c.pop("image", None)
    for key in ("activeDeadlineSeconds", "tolerations"):
        if key in old_spec:
            munged[key] = old_spec[key]
        else:
            munged.pop(key, None)
    grace = old_spec.get("terminationGracePeriodSeconds")
    if is_int(grace) and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    if munged != old_spec:
        causes.forbidden("spec", f"{_MUTABLE}\n{_diff(old_spec, munged)}")


def _only_added_tolerations(new: list[Any], old: list[Any], causes: Causes) -> None:
    """Every old toleration is still there; only its tolerationSeconds may shrink."""
    for was in old:
        if not isinstance(was, dict):
            continue
        same = _without_seconds(was)
        if not any(isinstance(t, dict) and _without_seconds(t) == same for t in new):
            causes.forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
            return


def _without_seconds(toleration: Obj) -> Obj:
    return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}


def _diff(old: Obj, new: Obj) -> str:
    """The two specs' difference as unified hunks of their indented JSON (kube shows its Go
    struct the same way)."""
    a = json.dumps(old, indent=1).splitlines()
    b = json.dumps(new, indent=1).splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=3))[2:]
    return "\n".join(lines) + "\n"


def validate_ephemeral_update(new: Obj, old: Obj, causes: Causes) -> None:
    """Ephemeral containers are only ever added: the existing ones stay as they are."""
    _spec_rules(new, causes)
    added = {
        c.get("name"): c
        for c in list_at(dict_at(new, "spec"), "ephemeralContainers")
        if isinstance(c, dict)
    }
    for was in list_at(dict_at(old, "spec"), "ephemeralContainers"):
        if not isinstance(was, dict):
            continue
        name = was.get("name")
        now = added.get(name)
        if now is None:
            causes.forbidden(
                "spec.ephemeralContainers",
                f'existing ephemeral containers "{name}" may not be removed\n',
            )
        elif now != was:
            causes.forbidden(
                "spec.ephemeralContainers",
                f'existing ephemeral containers "{name}" may not be changed\n{_diff(was, now)}',
            )


def validate_resize(new: Obj, old: Obj, causes: Causes) -> None:
    """A resize keeps the pod's QoS class and removes no request or limit."""
    _spec_rules(new, causes)
    qos = dict_at(old, "status").get("qosClass")
    if qos_class(dict_at(new, "spec")) != qos:
        causes.invalid("spec", qos, "Pod QOS Class may not change as a result of resizing")
    for key in ("containers", "initContainers"):
        now = list_at(dict_at(new, "spec"), key)
        for i, was in enumerate(list_at(dict_at(old, "spec"), key)):
            if not isinstance(was, dict) or i >= len(now) or not isinstance(now[i], dict):
                continue
            for table in ("requests", "limits"):
                before = dict_at(dict_at(was, "resources"), table)
                after = dict_at(dict_at(now[i], "resources"), table)
                if any(name not in after for name in before):
                    causes.forbidden(
                        f"spec.{key}[{i}].resources.{table}",
                        f"resource {table} cannot be removed",
                    )


RULES = {"pods": (validate_create, validate_update, None)}
SUBRESOURCE_RULES = {
    ("pods", "ephemeralcontainers"): validate_ephemeral_update,
    ("pods", "resize"): validate_resize,
}
