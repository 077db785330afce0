"""Pruning and defaulting of custom resources, as apiextensions-apiserver does on every request
and on every read from storage.

Pruning drops what the structural schema does not declare (outside
``x-kubernetes-preserve-unknown-fields``) so that stored objects only hold what clients were
promised; defaulting fills absent (or null, non-nullable) fields from ``default``. Both walk
only the structural part of the schema: value validations (allOf, anyOf, …) never prune or
default.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrio.emulator.schema_validate import Schema, Token, path_text

# Kept at the root and in embedded resources: ObjectMeta and TypeMeta are not described by the
# schema (kube prunes ObjectMeta by its own Go type instead).
_TYPE_AND_OBJECT_META = ("apiVersion", "kind", "metadata")
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def prune(schema: Schema, obj: Any, root: bool = True) -> list[str]:
    """Remove undeclared fields from ``obj`` in place; returns their paths (for
    fieldValidation), e.g. ``spec.foo`` or ``spec.items[0].bar``. ``root``: ``obj`` is a whole
    object, whose apiVersion, kind and metadata are not the schema's to prune."""
    dropped: list[str] = []
    _prune(schema, obj, (), dropped, root=root)
    return dropped


def _prune(s: Schema, v: Any, path: tuple[Token, ...], dropped: list[str], root: bool) -> None:
    if isinstance(v, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        keep_meta = root or bool(s.get("x-kubernetes-embedded-resource"))
        preserve = bool(s.get("x-kubernetes-preserve-unknown-fields")) or extra is True
        for k in list(v):
            if keep_meta and k in _TYPE_AND_OBJECT_META:
                if k == "metadata":
                    _prune_object_meta(v[k], (*path, k), dropped)
                elif k in props:
                    _prune(props[k], v[k], (*path, k), dropped, False)
                continue
            if k in props:
                _prune(props[k], v[k], (*path, k), dropped, False)
            elif isinstance(extra, dict):
                _prune(extra, v[k], (*path, k), dropped, False)
            elif not preserve:
                del v[k]
                dropped.append(path_text((*path, k)))
    elif isinstance(v, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(v):
                _prune(items, item, (*path, i), dropped, False)


def _prune_object_meta(md: Any, path: tuple[Token, ...], dropped: list[str]) -> None:
    """ObjectMeta decodes into its Go type: fields it does not have are dropped."""
    if not isinstance(md, dict):
        return
    for k in list(md):
        if k not in _OBJECT_META_FIELDS:
            del md[k]
            dropped.append(path_text((*path, k)))


def default(schema: Schema, obj: Any) -> None:
    """Apply ``default`` values in place, with kube's null rules: a null in a non-nullable
    field takes the default when there is one and is dropped when there is none."""
    if isinstance(obj, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for k, ps in props.items():
            if k not in obj:
                if "default" in ps:
                    obj[k] = copy.deepcopy(ps["default"])
            elif obj[k] is None and not ps.get("nullable"):
                if "default" in ps:
                    obj[k] = copy.deepcopy(ps["default"])
                else:
                    del obj[k]
            if k in obj:
                default(ps, obj[k])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k in list(obj):
                if k in props:
                    continue
                if obj[k] is None and not extra.get("nullable"):
                    if "default" in extra:
                        obj[k] = copy.deepcopy(extra["default"])
                    else:
                        del obj[k]
                        continue
                default(extra, obj[k])
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                if item is None and "default" in items and not items.get("nullable"):
                    obj[i] = copy.deepcopy(items["default"])
                default(items, obj[i])
