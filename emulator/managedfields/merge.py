"""Merging an applied configuration into the live object, and removing the fields an applier
gave up: the object half of server-side apply (the ownership half is ``ownership``).

Maps merge key by key unless atomic; lists by their kind: a list-map item by its keys, a set
by value, an atomic list replaced whole. Results never share structure with the applied
configuration, which the caller may still hold.
"""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.jsoncopy import json_copy
from kubetrio.emulator.managedfields.fieldset import FieldSet, Path, key_element, value_element
from kubetrio.emulator.managedfields.schema import Schema


def merge(live: Any, applied: Any, schema: Schema) -> Any:
    if isinstance(live, dict) and isinstance(applied, dict) and not schema.atomic_map():
        out = dict(live)
        for key, value in applied.items():
            child = schema.field(key)
            out[key] = merge(live[key], value, child) if key in live else json_copy(value)
        return out
    if isinstance(live, list) and isinstance(applied, list):
        kind = schema.list_kind()
        if kind.kind == "map" and all(isinstance(v, dict) for v in (*live, *applied)):
            items = schema.items()
            out_items = list(live)
            where = {key_element(v, kind.keys, kind.defaults): i for i, v in enumerate(out_items)}
            for item in applied:
                k = key_element(item, kind.keys, kind.defaults)
                if k in where:
                    out_items[where[k]] = merge(out_items[where[k]], item, items)
                else:
                    where[k] = len(out_items)
                    out_items.append(json_copy(item))
            return out_items
        if kind.kind == "set":
            out_set = list(live)
            out_set.extend(json_copy(v) for v in applied if v not in live)
            return out_set
    return json_copy(applied)


def remove(obj: dict[str, Any], paths: FieldSet, schema: Schema) -> dict[str, Any]:
    """``obj`` without the fields and list items ``paths`` name, changed in place (callers
    pass their own copy)."""
    for path in sorted(paths, key=len):  # an item before its fields: keys still match
        _remove(obj, path, schema, False)
    return obj


def drop_emptied(obj: dict[str, Any], paths: FieldSet, schema: Schema) -> dict[str, Any]:
    """``obj`` without the maps and lists that removing ``paths`` left empty (the apiserver
    drops them, built-in kinds and custom resources alike)."""
    for path in sorted(paths, key=len, reverse=True):
        for n in range(len(path) - 1, 0, -1):
            node = _find(obj, path[:n], schema)
            if node is None or node:
                break
            _remove(obj, path[:n], schema, True)
    return obj


def _find(node: Any, path: Path, schema: Schema) -> Any:
    for element in path:
        if isinstance(node, dict) and element.startswith("f:"):
            key = element[2:]
            node, schema = node.get(key), schema.field(key)
        elif isinstance(node, list) and element.startswith("k:"):
            kind, schema = schema.list_kind(), schema.items()
            node = next(
                (
                    i
                    for i in node
                    if isinstance(i, dict) and key_element(i, kind.keys, kind.defaults) == element
                ),
                None,
            )
        else:
            return None
    return node


def _remove(node: Any, path: Path, schema: Schema, drop_empty: bool) -> bool:
    """Remove ``path`` below ``node``; True when that leaves ``node`` empty."""
    element, rest = path[0], path[1:]
    if isinstance(node, dict) and element.startswith("f:"):
        key = element[2:]
        if key not in node:
            return False
        if rest:
            emptied = _remove(node[key], rest, schema.field(key), drop_empty)
            if not (emptied and drop_empty):
                return False
        del node[key]
        return not node
    if isinstance(node, list) and element[:2] in ("k:", "v:"):
        kind = schema.list_kind()
        for i, item in enumerate(node):
            if element.startswith("v:"):
                hit = not isinstance(item, dict | list) and value_element(item) == element
            else:
                hit = isinstance(item, dict) and (
                    key_element(item, kind.keys, kind.defaults) == element
                )
            if not hit:
                continue
            if rest:
                emptied = _remove(item, rest, schema.items(), drop_empty)
                if not (emptied and drop_empty):
                    return False
            del node[i]
            return not node
    return False
