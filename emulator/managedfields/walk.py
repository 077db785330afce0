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

MEMBER: Any = object()


class DuplicateKey(ValueError):
    """An applied list-map holding two items with the same key (``element``) at ``path``."""

    def __init__(self, path: Path, element: str) -> None:
        super().__init__(path, element)
        self.path = path
        self.element = element  # the value recorded for a path that is a member but not a leaf


# Never owned: identity and what the server alone writes (the apiserver strips these too).
_ROOT_SKIP = frozenset({"apiVersion", "kind"})
_META_SKIP = frozenset(
    {
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
    }
)
_META: Path = ("f:metadata",)


def members(obj: dict[str, Any], schema: Schema) -> dict[Path, Any]:
    """Path -> leaf value (``MEMBER`` for maps, lists and items that are members)."""
    out: dict[Path, Any] = {}
    _map(obj, schema, (), True, False, out)
    return out


def applied_set(obj: dict[str, Any], schema: Schema) -> FieldSet:
    """What an applied configuration sets: its leaves and list items."""
    out: dict[Path, Any] = {}
    _map(obj, schema, (), True, True, out)
    return frozenset(out)


def _skip(prefix: Path, key: str) -> bool:
    if not prefix:
        return key in _ROOT_SKIP
    return prefix == _META and key in _META_SKIP


def _map(
    value: dict[str, Any],
    schema: Schema,
    prefix: Path,
    zero: bool,
    applied: bool,
    out: dict[Path, Any],
) -> None:
    for key, child in value.items():
        if len(prefix) < 2 and _skip(prefix, key):
            continue
        present = zero and schema.zero_present(key)
        _value(child, schema.field(key), (*prefix, "f:" + key), present, applied, out)


def _value(
    value: Any, schema: Schema, path: Path, zero: bool, applied: bool, out: dict[Path, Any]
) -> None:
    if isinstance(value, dict) and not schema.atomic_map():
        # An applier owns a map it names only when the map is empty or no schema speaks
        # for it (the library deduces such a map and owns it whole as well as its keys).
        member = (not zero) if not applied else (not value or schema.node is None)
        if member and path != _META:
            out[path] = MEMBER
        _map(value, schema, path, zero, applied, out)
        return
    if isinstance(value, list) and value:
        kind = schema.list_kind()
        if kind.kind == "set" and all(not isinstance(v, dict | list) for v in value):
            if not applied and not zero:
                out[path] = MEMBER
            for item in value:
                out[(*path, value_element(item))] = True
            return
        if kind.kind == "map" and all(isinstance(v, dict) for v in value):
            if not applied and not zero:
                out[path] = MEMBER
            items = schema.items()
            for item in value:
                item_path = (*path, key_element(item, kind.keys, kind.defaults))
                if applied and item_path in out:
                    raise DuplicateKey(path, item_path[-1])
                out[item_path] = MEMBER
                _map(item, items, item_path, False, applied, out)
            return
    out[path] = value


def diff(old: dict[str, Any], new: dict[str, Any], schema: Schema) -> tuple[set[Path], set[Path]]:
    """(added or modified, removed) paths from ``old`` to ``new``. Equal subtrees are
    skipped whole (a C-speed comparison), so an update costs what it changed."""
    changed: dict[Path, Any] = {}
    removed: dict[Path, Any] = {}
    _diff_map(old, new, schema, (), changed, removed)
    return set(changed), set(removed)


def _diff_map(
    old: dict[str, Any],
    new: dict[str, Any],
    schema: Schema,
    prefix: Path,
    changed: dict[Path, Any],
    removed: dict[Path, Any],
) -> None:
    """Both maps exist (a create diffs against the zero object), so their fields that the
    Go zero value holds exist too: those are never "added" as members."""
    for key, value in new.items():
        if len(prefix) < 2 and _skip(prefix, key):
            continue
        before = old.get(key, _ABSENT)
        if before is not _ABSENT and before == value and type(before) is type(value):
            continue
        child, path = schema.field(key), (*prefix, "f:" + key)
        present = schema.zero_present(key)
        if before is _ABSENT:
            _value(value, child, path, present, False, changed)
        else:
            _diff_value(before, value, child, path, present, changed, removed)
    for key, value in old.items():
        if key not in new and not (len(prefix) < 2 and _skip(prefix, key)):
            present = schema.zero_present(key)
            _value(value, schema.field(key), (*prefix, "f:" + key), present, False, removed)


def _diff_value(
    old: Any,
    new: Any,
    schema: Schema,
    path: Path,
    zero: bool,
    changed: dict[Path, Any],
    removed: dict[Path, Any],
) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and not schema.atomic_map():
        _diff_map(old, new, schema, path, changed, removed)
        return
    if isinstance(old, list) and isinstance(new, list) and old and new:
        before = _members_of_list(old, schema, path)
        after = _members_of_list(new, schema, path)
        if before is not None and after is not None:
            kind = schema.list_kind()
            items = schema.items()
            for element, item in after.items():
                was = before.get(element, _ABSENT)
                item_path = (*path, element)
                if was is _ABSENT:
                    if kind.kind == "set":
                        changed[item_path] = True
                    else:
                        changed[item_path] = MEMBER
                        _map(item, items, item_path, False, False, changed)
                elif kind.kind == "map" and was != item:
                    _diff_map(was, item, items, item_path, changed, removed)
            for element, item in before.items():
                if element not in after:
                    item_path = (*path, element)
                    if kind.kind == "set":
                        removed[item_path] = True
                    else:
                        removed[item_path] = MEMBER
                        _map(item, items, item_path, False, False, removed)
            return
    # A leaf, an atomic value, or a change of shape: the old paths go, the new ones come.
    old_paths: dict[Path, Any] = {}
    new_paths: dict[Path, Any] = {}
    _value(old, schema, path, zero, False, old_paths)
    _value(new, schema, path, zero, False, new_paths)
    for p in old_paths.keys() - new_paths.keys():
        removed[p] = old_paths[p]
    for p, v in new_paths.items():
        if p not in old_paths or (v is not MEMBER and (old_paths[p] != v)):
            changed[p] = v


def _members_of_list(value: list[Any], schema: Schema, path: Path) -> dict[str, Any] | None:
    """element -> item of a set or list-map (None for an atomic list or a mismatched one)."""
    kind = schema.list_kind()
    if kind.kind == "set" and all(not isinstance(v, dict | list) for v in value):
        return {value_element(v): v for v in value}
    if kind.kind == "map" and all(isinstance(v, dict) for v in value):
        return {key_element(v, kind.keys, kind.defaults): v for v in value}
    return None


_ABSENT: Any = object()
