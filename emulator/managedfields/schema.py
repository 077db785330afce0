"""Where a value sits in its kind's schema, as field ownership needs it: whether a list is
atomic, a set or a map keyed by some fields of its items (``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys``, else ``x-kubernetes-patch-merge-key``), whether a map is
atomic (``x-kubernetes-map-type``), and whether a struct is present in a kind's zero value.

Built-in kinds read the apiserver's published definitions; custom resources read their CRD's
schema (metadata from the built-in ObjectMeta). Where no schema speaks, the library's
defaults hold: lists atomic, maps granular.

The zero-value question exists because the apiserver compares a create against an empty
object of the Go type, in which non-pointer structs (a Deployment's ``spec.template``) and
slices without ``omitempty`` (a pod's ``containers``, as null) are already there and so are
not "added" as members; pointers (``strategy.rollingUpdate``) and ``omitempty`` maps
(``labels``) are not. The Go structs are not here: a struct counts as present when its parent
requires it or the Go tags say it is a non-pointer ``omitempty`` field, a slice or map when
the tags say it is not ``omitempty`` (kubepb's gotags).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.kubepb.codec import jsonmap, message_class
from kubetrio.emulator.openapi_schemas import OBJECT_META, builtin_definitions, builtin_name

_REF = "#/definitions/"


# Defaults of list-map key fields the published definitions do not carry, though the Go
# types declare them (``+default="TCP"`` on every port's protocol): an item that leaves the
# field out is keyed with the default, as the apiserver's schema keys it.
_KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class ListKind:
    kind: str  # "atomic", "set" or "map"
    keys: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()  # key fields' defaults, for items without them


ATOMIC_LIST = ListKind("atomic")


class Schema:
    """One schema node (``node`` is None where no schema speaks)."""

    __slots__ = ("_children", "_defs", "_items", "_list", "_zero", "name", "node")

    def __init__(self, node: dict[str, Any] | None, defs: dict[str, Any], name: str = "") -> None:
        while node is not None:
            ref = node.get("$ref")
            if not ref and isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
                ref = node["allOf"][0].get("$ref")
            if not isinstance(ref, str) or not ref.startswith(_REF):
                break
            name = ref[len(_REF) :]
            found = defs.get(name)
            # The marker on the referring property wins over the referenced definition's.
            node = (
                {**found, **{k: v for k, v in node.items() if k.startswith("x-")}}
                if (isinstance(found, dict))
                else None
            )
        self.node = node
        self._defs = defs
        self.name = name
        # Children are resolved once per schema node: writes walk the same paths again.
        self._children: dict[str, Schema] = {}
        self._items: Schema | None = None
        self._zero: dict[str, bool] = {}
        self._list: ListKind | None = None

    def field(self, key: str) -> Schema:
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._field(key)
        return child

    def _field(self, key: str) -> Schema:
        node = self.node
        if node is None:
            return _NONE
        props = node.get("properties")
        if isinstance(props, dict) and key in props:
            return Schema(props[key], self._defs)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            # A map's values share one schema: cached under a key no field can have.
            shared = self._children.get("")
            if shared is None:
                shared = self._children[""] = Schema(extra, self._defs)
            return shared
        return _NONE

    def items(self) -> Schema:
        if self._items is None:
            node = self.node
            raw = node.get("items") if node is not None else None
            self._items = Schema(raw, self._defs) if isinstance(raw, dict) else _NONE
        return self._items

    def list_kind(self) -> ListKind:
        if self._list is None:
            self._list = self._list_kind()
        return self._list

    def _list_kind(self) -> ListKind:
        node = self.node or {}
        kind = node.get("x-kubernetes-list-type")
        if kind == "map":
            keys = tuple(sorted(node.get("x-kubernetes-list-map-keys") or ()))
            return ListKind("map", keys, self._key_defaults(keys))
        if kind == "set":
            return ListKind("set")
        if kind == "atomic":
            return ATOMIC_LIST
        strategy = str(node.get("x-kubernetes-patch-strategy") or "")
        if "merge" in strategy.split(","):
            key = node.get("x-kubernetes-patch-merge-key")
            return ListKind("map", (key,)) if isinstance(key, str) else ListKind("set")
        return ATOMIC_LIST

    def _key_defaults(self, keys: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
        items = self.items()
        out: list[tuple[str, Any]] = []
        for key in keys:
            node = items.field(key).node or {}
            if "default" in node:
                out.append((key, node["default"]))
            elif items.name and key in _KEY_DEFAULTS:
                out.append((key, _KEY_DEFAULTS[key]))
        return tuple(out)

    def atomic_map(self) -> bool:
        node = self.node or {}
        return node.get("x-kubernetes-map-type") == "atomic"

    def is_struct(self) -> bool:
        node = self.node or {}
        return isinstance(node.get("properties"), dict) and not node.get("additionalProperties")

    def zero_present(self, key: str) -> bool:
        """Whether the struct field ``key`` exists in the Go zero value of this struct."""
        if not self.name:
            return False
        found = self._zero.get(key)
        if found is None:
            found = self._zero[key] = self._zero_present(key)
        return found

    def _zero_present(self, key: str) -> bool:
        if self.node is None:
            return False
        child = self.field(key)
        node = child.node or {}
        if node.get("type") == "array" or isinstance(node.get("additionalProperties"), dict):
            # A slice or map the Go type serialises even when nil (no omitempty).
            return _go_field(self.name, key) == "plain"
        if not child.is_struct() or child.atomic_map():
            return False
        required = key in (self.node.get("required") or ())
        return required or _go_field(self.name, key) == "omitempty"


_NONE = Schema(None, {})


@functools.lru_cache(maxsize=4096)
def _go_field(definition: str, key: str) -> str:
    """How the Go struct behind ``definition`` tags field ``key``: "omitempty" (a non-pointer
    field omitted when empty), "plain" (always serialised), "" (unknown)."""
    proto = "k8s.io." + definition.removeprefix("io.k8s.").replace("-", "_")
    cls = message_class(proto)
    if cls is None:
        return ""
    field = cls.DESCRIPTOR.fields_by_name.get(key)
    if field is None:
        return ""
    desc: Any = cls.DESCRIPTOR
    return "omitempty" if field.number in jsonmap().omitempty(desc) else "plain"


@functools.lru_cache(maxsize=512)
def builtin_schema(group: str, version: str, kind: str) -> Schema:
    """The schema of a built-in kind (a schemaless one where none is published)."""
    defs = builtin_definitions()
    name = builtin_name(group, version, kind) or ""
    return Schema(defs.get(name), defs, name)


_CRD_SCHEMAS: dict[tuple[str, str, str], Schema] = {}


def crd_schema(crd: dict[str, Any] | None, version: str) -> Schema:
    """A custom resource's schema in ``version``, with the built-in ObjectMeta (kept per
    CRD resourceVersion)."""
    md = (crd or {}).get("metadata") or {}
    key = (str(md.get("uid")), str(md.get("resourceVersion")), version)
    found = _CRD_SCHEMAS.get(key)
    if found is None:
        if len(_CRD_SCHEMAS) > 256:
            _CRD_SCHEMAS.clear()
        found = _CRD_SCHEMAS[key] = _crd_schema(crd, version)
    return found


def _crd_schema(crd: dict[str, Any] | None, version: str) -> Schema:
    defs = builtin_definitions()
    node: dict[str, Any] = {}
    for v in ((crd or {}).get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("name") == version:
            holder = v.get("schema")
            raw = holder.get("openAPIV3Schema") if isinstance(holder, dict) else None
            node = dict(raw) if isinstance(raw, dict) else {}
    props = dict(node.get("properties") or {})
    props["metadata"] = {"$ref": _REF + OBJECT_META}
    node["properties"] = props
    return Schema(node, defs)


def schema_for(rt: ResourceType, crd: dict[str, Any] | None, version: str) -> Schema:
    """The schema of ``rt``'s objects in ``version``."""
    if rt.builtin:
        return builtin_schema(rt.group, version, rt.kind)
    return crd_schema(crd, version)


__all__ = ["ATOMIC_LIST", "ListKind", "Schema", "schema_for"]
