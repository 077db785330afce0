"""The JSON patch (RFC 6902) a defaulting webhook answers, computed from the object it returns.

A defaulter works on a typed view, which holds only the fields its Struct declares. Diffing the
raw request object against the encoded view would remove every field the Struct does not know
(and every field the kind's author added since). So the change is measured between two views —
the view of the request object and the view the defaulter returned — and only that change is
replayed onto the raw object; the patch is then the difference between the raw object and its
replayed copy (computed by ``jsonpatch``), and fields the view does not know stay.

The replay walks both views: a key only in the returned view is added, a key whose value
differs is replaced (objects recursively, lists element by element when their lengths agree,
whole otherwise), and a key the returned view no longer has is removed (views leave default
values off the wire, so setting a field back to its default removes it, which is the same
object for the typed reader). So unknown fields survive everywhere except inside what the
handler removed, and inside list items when it changed the list's length.

Example: the request object is ``{"spec": {"class": "a", "x-new": 1}}``, the Struct knows
``spec.class`` and ``spec.replicas``, and the defaulter sets ``replicas = 3``; the views differ
by ``/spec/replicas``, so the patch is ``[{"op": "add", "path": "/spec/replicas", "value": 3}]``
and ``x-new`` stays.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import msgspec

__all__ = ["json_patch", "replay", "view"]

_ABSENT: Any = object()


def view(obj: msgspec.Struct) -> Any:
    """The JSON form of a typed object, as it would go on the wire."""
    return msgspec.to_builtins(obj)


def replay(raw: Any, before: Any, after: Any) -> Any:
    """``raw`` with the change from view ``before`` to view ``after`` applied (a new value)."""
    if before == after:
        return raw
    if isinstance(before, dict) and isinstance(after, dict) and isinstance(raw, dict):
        out = dict(raw)
        for key in before.keys() | after.keys():
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if old == new:
                continue
            if new is _ABSENT:
                out.pop(key, None)  # cleared (or set back to its default) by the handler
            elif key in raw and old is not _ABSENT:
                out[key] = replay(raw[key], old, new)
            else:
                out[key] = copy.deepcopy(new)
        return out
    if (
        isinstance(before, list)
        and isinstance(after, list)
        and isinstance(raw, list)
        and len(before) == len(after) == len(raw)
    ):
        return [replay(r, b, a) for r, b, a in zip(raw, before, after, strict=True)]
    return copy.deepcopy(after)


def json_patch(raw: Any, patched: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``raw`` into ``patched``."""
    operations: list[dict[str, Any]] = jsonpatch.make_patch(raw, patched).patch
    return operations
