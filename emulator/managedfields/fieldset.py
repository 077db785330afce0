"""Sets of field paths, and their wire form (``fieldsV1``).

A path is a tuple of path elements spelled as fieldsV1 spells them: ``f:<field>`` for a
struct field or map key, ``k:<json>`` for an item of a list keyed by some of its fields,
``v:<json>`` for an item of a set-like list, ``i:<index>`` for a list position. A set of
paths is a plain Python ``set``/``frozenset`` of such tuples, so set algebra (union,
difference, intersection) is the language's own; only the tree form on the wire needs code.

In fieldsV1 a path is a member of the set when its node holds ``"."`` (or is an empty
object): ``{"f:data": {".": {}, "f:a": {}}}`` holds ``(f:data,)`` and ``(f:data, f:a)``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

import msgspec

from kubetrio.emulator.jsoncopy import json_copy

Path = tuple[str, ...]
FieldSet = frozenset[Path]
EMPTY: FieldSet = frozenset()
_PREFIXES = ("f:", "k:", "v:", "i:")


class BadFieldSet(ValueError):
    """A fieldsV1 value that is not a set of paths; the message says where."""


def key_element(
    item: dict[str, Any], keys: Iterable[str], defaults: Iterable[tuple[str, Any]] = ()
) -> str:
    """The ``k:`` element naming a list-map item by its key fields, given in name order (the
    library's order; ``ListKind`` keeps them so); a key field the item leaves out takes its
    schema default."""
    if defaults:
        fallback = dict(defaults)
        picked = {k: item.get(k, fallback.get(k)) for k in keys if k in item or k in fallback}
    else:
        picked = {k: item[k] for k in keys if k in item}
    return "k:" + _compact(picked)


def value_element(value: Any) -> str:
    return "v:" + _compact(value)


def _compact(value: Any) -> str:
    """JSON without spaces, as the library writes keys and values (msgspec: in C)."""
    try:
        return msgspec.json.encode(value).decode()
    except (msgspec.EncodeError, TypeError):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode(paths: FieldSet) -> dict[str, Any]:
    """The fieldsV1 tree of a set: children in the library's order, ``"."`` first. Objects
    made from one template own the same sets, so trees are remembered by set (and handed
    out as private copies: stored objects never share structure)."""
    return json_copy(_encode(paths))


@functools.lru_cache(maxsize=2048)
def _encode(paths: FieldSet) -> dict[str, Any]:
    """The tree of ``encode``.

    Sorted tuples put a path before its extensions and siblings in string order, which is
    the library's (f: before k: before v:; no i: is ever written), so one pass in that order
    builds each node with its keys already in place."""
    tree: dict[str, Any] = {}
    members: set[int] = set()
    for path in sorted(paths):
        node = tree
        for element in path:
            child = node.get(element)
            if child is None:
                if not node and id(node) in members:
                    node["."] = {}
                child = node[element] = {}
            node = child
        members.add(id(node))
    return tree


def decode(tree: Any) -> FieldSet:
    """The set a fieldsV1 tree holds; BadFieldSet when it is not one. Remembered by the
    tree's JSON text, which msgspec writes faster than the tree can be walked."""
    if not isinstance(tree, dict):
        raise BadFieldSet("fieldsV1 must be an object")
    try:
        text = msgspec.json.encode(tree)
    except (msgspec.EncodeError, TypeError):
        return _decode(tree)
    return _decode_text(text)


@functools.lru_cache(maxsize=2048)
def _decode_text(text: bytes) -> FieldSet:
    return _decode(msgspec.json.decode(text))


def _decode(tree: dict[str, Any]) -> FieldSet:
    out: set[Path] = set()
    _walk(tree, (), out)
    return frozenset(out)


def _walk(node: dict[str, Any], prefix: Path, out: set[Path]) -> None:
    if not node and prefix:
        out.add(prefix)
        return
    for key, child in node.items():
        if key == ".":
            if prefix:
                out.add(prefix)
            continue
        if not key.startswith(_PREFIXES) or not isinstance(child, dict):
            raise BadFieldSet(f"unexpected field set element {key!r}")
        _walk(child, (*prefix, key), out)


def path_text(path: Path) -> str:
    """A path as conflict messages print it: ``.spec.containers[name="c"].image``."""
    parts: list[str] = []
    for element in path:
        kind, body = element[:1], element[2:]
        if kind == "f":
            parts.append("." + body)
        elif kind == "k":
            fields = json.loads(body)
            inner = ",".join(
                f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in fields.items()
            )
            parts.append(f"[{inner}]")
        elif kind == "v":
            parts.append(f"[={body}]")
        else:
            parts.append(f"[{body}]")
    return "".join(parts)


def under(paths: Iterable[Path], prefix: Path) -> FieldSet:
    """The paths at or below ``prefix``."""
    n = len(prefix)
    return frozenset(p for p in paths if p[:n] == prefix)
