"""ObjectMeta rules every kind shares (``ValidateObjectMeta``): the name in the form its kind
needs, generateName, label keys and values, annotation keys and their total size, finalizer
names. Shapes (a map of strings, a list of strings) are refused earlier by ``meta``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.validation import names
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]
NameRule = Callable[[str], list[str]]

ANNOTATIONS_LIMIT = 256 * 1024
# Finalizers the apiserver knows without a domain prefix.
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_RBAC = "rbac.authorization.k8s.io"

# The name each kind's strategy demands; a DNS subdomain when not listed.
NAME_RULES: dict[str, NameRule] = {
    "namespaces": names.label_name,
    "services": names.label_name,
}


def name_rule(rt: ResourceType) -> NameRule:
    if rt.group == _RBAC:
        return names.path_segment
    return NAME_RULES.get(rt.key, names.dns_subdomain)


def _prefix_rule(rule: NameRule, prefix: str) -> list[str]:
    """generateName is checked as a name whose trailing dash would be followed by more."""
    if len(prefix) > 1 and prefix.endswith("-"):
        prefix = prefix[:-1] + "a"
    return rule(prefix)


def on_create(rt: ResourceType, obj: Obj, causes: Causes) -> None:
    md = obj.get("metadata") or {}
    rule = name_rule(rt)
    prefix = md.get("generateName")
    if isinstance(prefix, str) and prefix:
        for msg in _prefix_rule(rule, prefix):
            causes.invalid("metadata.generateName", prefix, msg)
    name = md.get("name")
    if isinstance(name, str):
        for msg in rule(name):
            causes.invalid("metadata.name", name, msg)
    fields(md, causes)


def on_update(rt: ResourceType, new: Obj, old: Obj, causes: Causes) -> None:
    """An update's metadata is checked on its own and against the old object, by the registry
    and again by the kind's ValidateObjectMetaUpdate: a cluster names a broken label three
    times and a finalizer added while deleting twice."""
    md, old_md = new.get("metadata") or {}, old.get("metadata") or {}
    for _ in range(2):
        _no_new_finalizers(md, old_md, causes)
        fields(md, causes)
    fields(md, causes)


def _no_new_finalizers(md: Obj, old_md: Obj, causes: Causes) -> None:
    """An object being deleted takes no finalizer it did not have."""
    if not old_md.get("deletionTimestamp"):
        return
    before = old_md.get("finalizers") or []
    added = [f for f in md.get("finalizers") or [] if f not in before]
    if added:
        shown = "[]string{" + ", ".join(f'"{f}"' for f in added) + "}"
        causes.forbidden(
            "metadata.finalizers",
            "no new finalizers can be added if the object is being deleted, found new "
            f"finalizers {shown}",
        )


def fields(md: Obj, causes: Causes) -> None:
    """Labels, annotations and finalizers: what each kind's update rules check once more when
    they revalidate the whole new object."""
    labels(md.get("labels"), "metadata.labels", causes)
    _annotations(md.get("annotations"), causes)
    _finalizers(md.get("finalizers"), causes)


def labels(value: Any, field: str, causes: Causes) -> None:
    """ValidateLabels: also a selector's matchLabels and a node selector."""
    if not isinstance(value, dict):
        return
    for key, val in value.items():
        for msg in names.qualified_name(key):
            causes.invalid(field, key, msg)
        if isinstance(val, str):
            for msg in names.label_value(val):
                causes.invalid(field, val, msg)


def _annotations(value: Any, causes: Causes) -> None:
    if not isinstance(value, dict):
        return
    size = 0
    for key, val in value.items():
        for msg in names.qualified_name(key.lower()):
            causes.invalid("metadata.annotations", key, msg)
        size += len(key.encode()) + len(str(val).encode())
    if size > ANNOTATIONS_LIMIT:
        causes.too_long("metadata.annotations", ANNOTATIONS_LIMIT)


def _finalizers(value: Any, causes: Causes) -> None:
    if not isinstance(value, list):
        return
    for i, finalizer in enumerate(value):
        if isinstance(finalizer, str):
            causes.extend("metadata.finalizers", finalizer, names.qualified_name(finalizer))
            _standard(finalizer, f"metadata.finalizers[{i}]", causes)


def finalizer_name(value: str, field: str, causes: Causes) -> None:
    """A finalizer named where only the kube rules apply (a Namespace's spec)."""
    causes.extend(field, value, names.qualified_name(value))
    _standard(value, field, causes)


def _standard(value: str, field: str, causes: Causes) -> None:
    if "/" not in value and value not in STANDARD_FINALIZERS:
        causes.invalid(
            field, value, "name is neither a standard finalizer name nor is it fully qualified"
        )
