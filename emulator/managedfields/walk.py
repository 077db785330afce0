"""The field paths of an object, read through its schema.

Two readings, because the apiserver keeps two kinds of sets: an update's owner gets the
fields it changed, where a map or list item that appears is itself a member (``"."``), so
``members`` gives every path with its leaf value; an applier owns what its configuration
names, leaves and list items only, which ``applied_set`` gives.
"""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.managedfields.fieldset import FieldSet, Path, key_element, value_element
from kubetrio.emulator.managedfields.schema import Schema

MEMBER: Any = object()  # the value recorded for a path that is a member but not a leaf

# Never owned: identity and what the server alone writes (the apiserver strips these too).
_STRIPPED: frozenset[Path] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", "f:" + k)
            for k in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
                "generation",
                "resourceVersion",
                "managedFields",
            )
        ),
    }
)


def members(obj: dict[str, Any], schema: Schema) -> dict[Path, Any]:
    """Path -> leaf value (``MEMBER`` for maps, lists and items that are members)."""
    out: dict[Path, Any] = {}
    _map(obj, schema, (), True, False, out)
    return _strip(out)


def applied_set(obj: dict[str, Any], schema: Schema) -> FieldSet:
    """What an applied configuration sets: its leaves and list items."""
    out: dict[Path, Any] = {}
    _map(obj, schema, (), True, True, out)
    return frozenset(_strip(out))


def _strip(out: dict[Path, Any]) -> dict[Path, Any]:
    for path in _STRIPPED:
        if path in out:
            if path == ("f:metadata",) or out[path] is not MEMBER:
                del out[path]
            else:
                for p in [p for p in out if p[:2] == path]:
                    del out[p]
    return out


def _map(
    value: dict[str, Any],
    schema: Schema,
    prefix: Path,
    zero: bool,
    applied: bool,
    out: dict[Path, Any],
) -> None:
    for key, child in value.items():
        present = zero and schema.zero_present(key)
        _value(child, schema.field(key), (*prefix, "f:" + key), present, applied, out)


def _value(
    value: Any, schema: Schema, path: Path, zero: bool, applied: bool, out: dict[Path, Any]
) -> None:
    if isinstance(value, dict) and not schema.atomic_map():
        if (not zero and not applied) or (applied and not value):
            out[path] = MEMBER
        _map(value, schema, path, zero, applied, out)
        return
    if isinstance(value, list) and value:
        kind = schema.list_kind()
        if kind.kind == "set" and all(not isinstance(v, dict | list) for v in value):
            if not applied:
                out[path] = MEMBER
            for item in value:
                out[(*path, value_element(item))] = True
            return
        if kind.kind == "map" and all(isinstance(v, dict) for v in value):
            if not applied:
                out[path] = MEMBER
            items = schema.items()
            for item in value:
                item_path = (*path, key_element(item, kind.keys, kind.defaults))
                out[item_path] = MEMBER
                _map(item, items, item_path, False, applied, out)
            return
    out[path] = value
