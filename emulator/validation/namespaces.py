"""Namespace rules: the name (a DNS label, checked with metadata), the finalizers in its spec,
and an update revalidating the whole new object, as ``ValidateNamespaceUpdate`` does. The spec's
finalizers change only through the ``finalize`` subresource."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]


def _spec_finalizers(obj: Obj, causes: Causes) -> None:
    finalizers = (obj.get("spec") or {}).get("finalizers")
    if not isinstance(finalizers, list):
        return
    for i, finalizer in enumerate(finalizers):
        if isinstance(finalizer, str):
            objectmeta.finalizer_name(finalizer, f"spec.finalizers[{i}]", causes)


def create(obj: Obj, causes: Causes) -> None:
    _spec_finalizers(obj, causes)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)
    _spec_finalizers(new, causes)


def finalize(new: Obj, old: Obj, causes: Causes) -> None:
    _spec_finalizers(new, causes)


RULES = {"namespaces": (create, update, None)}
SUBRESOURCE_RULES = {("namespaces", "finalize"): finalize}
