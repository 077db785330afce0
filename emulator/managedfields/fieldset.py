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

import json
from collections.abc import Iterable
from typing import Any

Path = tuple[str, ...]
FieldSet = frozenset[Path]
EMPTY: FieldSet = frozenset()
_PREFIXES = ("f:", "k:", "v:", "i:")
_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


class BadFieldSet(ValueError):
    """A fieldsV1 value that is not a set of paths; the message says where."""


def key_element(
    item: dict[str, Any], keys: Iterable[str], defaults: Iterable[tuple[str, Any]] = ()
) -> str:
    """The ``k:`` element naming a list-map item by its key fields (sorted by name, as the
    structured-merge-diff library orders them); a key field the item leaves out takes its
    schema default."""
    fallback = dict(defaults)
    picked = {k: item.get(k, fallback.get(k)) for k in sorted(keys) if k in item or k in fallback}
    return "k:" + json.dumps(picked, separators=(",", ":"), ensure_ascii=False)


def value_element(value: Any) -> str:
    return "v:" + json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _order(element: str) -> tuple[int, str]:
    return (_RANK.get(element[:1], 4), element[2:])


def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """The fieldsV1 tree of a set: children in the library's order, ``"."`` first."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _finish(tree)


def _finish(node: dict[str, Any]) -> dict[str, Any]:
    children = [k for k in node if k != "."]
    if not children:
        return {}
    out: dict[str, Any] = {".": {}} if "." in node else {}
    for key in sorted(children, key=_order):
        out[key] = _finish(node[key])
    return out


def decode(tree: Any) -> FieldSet:
    """The set a fieldsV1 tree holds; BadFieldSet when it is not one."""
    if not isinstance(tree, dict):
        raise BadFieldSet("fieldsV1 must be an object")
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
