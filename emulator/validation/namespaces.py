"""Namespace rules: the name (a DNS label, checked with metadata) and an update revalidating
the whole new object, as ``ValidateNamespaceUpdate`` does."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]


def update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)


RULES = {"namespaces": (None, update, None)}
