"""The RFC 7386 JSON merge patch that turns one object into another.

Sending the difference rather than the object is what keeps writes from dropping fields a
typed view does not hold: a PUT built from the view would erase them. Two limits come from the
format and the views: a merge patch cannot set a value to null (null means "remove"), and lists
are replaced whole. A field a view leaves at its default is omitted on the wire, so setting it
back to its default reads as removing it.

Example::

    from kubetrio.runtime import merge_patch

    after = msgspec.structs.replace(cm, data={**cm.data, "greeting": "hello"})
    patch = merge_patch(cm, after)  # {"data": {"greeting": "hello"}}
    if patch:
        await client.patch(ConfigMap, cm.name, patch, namespace=cm.namespace)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

_MISSING = object()


def merge_patch(before: Any, after: Any) -> Any:
    """The patch from ``before`` to ``after`` (typed Structs or plain JSON values); ``{}``
    when they are equal objects."""
    return _diff(msgspec.to_builtins(before), msgspec.to_builtins(after))


def _diff(before: Any, after: Any) -> Any:
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
        return after
    patch: dict[str, Any] = {key: None for key in before if key not in after}
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is _MISSING:
            patch[key] = value
        elif not _same(old, value):
            patch[key] = _diff(old, value)
    return patch


def _same(a: Any, b: Any) -> bool:
    """JSON equality: unlike ``==``, ``true`` is not ``1`` (nor ``1.0`` the integer 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386's MergePatch: what a server stores for ``patch`` sent to ``target``."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
