"""CustomResourceDefinitions generated from typed kinds (controller-gen's job, from msgspec types).

A kind declared with ``@kubetrio.api.resource`` already says everything its CRD needs: the
Struct's fields, their annotations and docstrings are the schema, the decorator holds names,
scope, subresources and printer columns. Generating the CRD from them means the YAML can never
drift from the code that reads the objects::

    $ kubetrio crd generate myproject.api:Greeting | kubectl apply -f -
    $ kubetrio crd generate myproject.api:Greeting -o config/crd   # example.com_greetings.yaml

or from Python: ``crd_for(Greeting)`` returns the CRD as a dict. Classes sharing group and kind
(``v1`` and ``v2`` of ``Greeting``) become one CRD with several versions; exactly one must be
declared ``storage=True``.

How types map (the result is *structural*, as kube-apiserver requires — no ``$ref``, every
node typed):

- ``str``/``int``/``float``/``bool`` → their OpenAPI types; ``datetime`` → ``format: date-time``
- ``X | None`` → ``nullable: true``; ``int | str`` → ``x-kubernetes-int-or-string``
- ``Literal[...]``/``Enum`` → ``enum``; ``msgspec.Meta`` bounds, ``pattern``, ``description``,
  ``title`` → the same OpenAPI keywords (``extra_json_schema`` is merged as-is)
- fields without a default are ``required``; non-zero defaults become server-side ``default``
  (zero values are left out: the typed views omit them on the wire, so the server should too)
- ``dict[str, X]`` → ``additionalProperties``; ``Any``/``dict[str, Any]`` keep unknown fields
  (``x-kubernetes-preserve-unknown-fields``), as does ``Annotated[..., PreserveUnknownFields]``
- ``tuple[Condition, ...]`` → a list map keyed by ``type``, as ``metav1.Condition`` lists are
"""

from __future__ import annotations

import importlib
import inspect as pyinspect
import traceback
from collections.abc import Iterable
from typing import Any

import msgspec
import msgspec.inspect as mi

from kubetrio.api.condition import Condition
from kubetrio.api.markers import SCHEMA_OF
from kubetrio.api.meta import kind_of
from kubetrio.api.registry import KindInfo

__all__ = ["CrdError", "classes_of", "crd_for", "import_class", "schema_for"]

Schema = dict[str, Any]

_SIMPLE_FACTORIES: tuple[Any, ...] = (list, dict, set, frozenset, tuple)
# Keywords msgspec's extra_json_schema may carry that kube's structural schema accepts.
_PASSTHROUGH = frozenset(
    {
        "description",
        "title",
        "required",
        "format",
        "pattern",
        "default",
        "example",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)


class CrdError(ValueError):
    """A class that cannot become a CRD; the message names the class or the field path."""


def crd_for(*classes: type) -> list[Schema]:
    """The CRDs of ``classes``: one per group and kind, its versions in the order given."""
    by_kind: dict[tuple[str, str], list[tuple[type, KindInfo]]] = {}
    for cls in classes:
        info = kind_of(cls)
        by_kind.setdefault((info.group, info.kind), []).append((cls, info))
    return [_crd(members) for members in by_kind.values()]


def _crd(members: list[tuple[type, KindInfo]]) -> Schema:
    first = members[0][1]
    for _, info in members[1:]:
        for attr in ("plural", "namespaced", "short_names", "categories", "name_singular"):
            if getattr(info, attr) != getattr(first, attr):
                raise CrdError(
                    f"{first.kind}: versions {first.version} and {info.version} disagree on "
                    f"{attr} ({getattr(first, attr)!r} vs {getattr(info, attr)!r})"
                )
    stored = [info.version for _, info in members if info.crd is None or info.crd.storage]
    if len(stored) != 1:
        raise CrdError(
            f"{first.kind}.{first.group}: exactly one version must be storage=True, "
            f"got {stored or 'none'}"
        )
    names: Schema = {
        "plural": first.plural,
        "singular": first.name_singular,
        "kind": first.kind,
        "listKind": f"{first.kind}List",
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": first.group_resource},
        "spec": {
            "group": first.group,
            "names": names,
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [_version(cls, info) for cls, info in members],
        },
    }


def _version(cls: type, info: KindInfo) -> Schema:
    facts = info.crd
    out: Schema = {
        "name": info.version,
        "served": facts.served if facts else True,
        "storage": facts.storage if facts else True,
        "schema": {"openAPIV3Schema": schema_for(cls)},
    }
    if facts and facts.printer_columns:
        out["additionalPrinterColumns"] = [_column(c) for c in facts.printer_columns]
    subresources: Schema = {}
    if "status" in info.subresources:
        subresources["status"] = {}
    if facts and facts.scale:
        scale: Schema = {
            "specReplicasPath": facts.scale.spec_replicas_path,
            "statusReplicasPath": facts.scale.status_replicas_path,
        }
        if facts.scale.label_selector_path:
            scale["labelSelectorPath"] = facts.scale.label_selector_path
        subresources["scale"] = scale
    if subresources:
        out["subresources"] = subresources
    return out


def _column(column: Any) -> Schema:
    out: Schema = {"name": column.name, "type": column.type, "jsonPath": column.json_path}
    if column.description:
        out["description"] = column.description
    if column.priority:
        out["priority"] = column.priority
    if column.format:
        out["format"] = column.format
    return out


def schema_for(cls: type) -> Schema:
    """The structural ``openAPIV3Schema`` of a kind's Struct: ``metadata`` is left to the
    server (``type: object`` only, as kube requires), ``apiVersion``/``kind`` are strings."""
    info = mi.type_info(cls)
    if not isinstance(info, mi.StructType):
        raise CrdError(f"{cls.__qualname__} is not a msgspec Struct")
    out = _struct(info, cls.__qualname__, (), top=True)
    props: Schema = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}
    props["metadata"] = {"type": "object"}
    props.update((k, v) for k, v in out.get("properties", {}).items() if k != "metadata")
    out["properties"] = props
    return out


def _struct(info: mi.StructType, path: str, seen: tuple[type, ...], top: bool = False) -> Schema:
    if info.cls in seen:
        raise CrdError(f"{path}: recursive type {info.cls.__qualname__} cannot be a CRD schema")
    seen = (*seen, info.cls)
    if info.tag_field is not None or info.array_like:
        raise CrdError(f"{path}: tagged or array_like Struct {info.cls.__qualname__} unsupported")
    out: Schema = {"type": "object"}
    doc = _doc(info.cls)
    if doc:
        out["description"] = doc
    props: Schema = {}
    required: list[str] = []
    for field in info.fields:
        if top and field.encode_name in ("apiVersion", "kind", "metadata"):
            continue
        where = f"{path}.{field.encode_name}"
        node = _node(field.type, where, seen)
        default = _default(field, where)
        if default is not None:
            node["default"] = default
        props[field.encode_name] = node
        if field.required:
            required.append(field.encode_name)
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    return out


def _doc(cls: type) -> str:
    # A class's own docstring only: Model's or KubeObject's would describe every type.
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return ""
    # Paragraphs become single lines: wrapping in source is not meaning.
    return "\n\n".join(" ".join(p.split()) for p in pyinspect.cleandoc(doc).split("\n\n"))


def _default(field: mi.Field, where: str) -> Any:
    """A field's default as the server should apply it, or None when it is a zero value (or a
    factory that cannot be evaluated without side effects)."""
    if field.required:
        return None
    if field.default is not msgspec.NODEFAULT:
        value = field.default
    elif field.default_factory in _SIMPLE_FACTORIES:
        value = field.default_factory()
    else:
        return None
    try:
        wire = msgspec.json.decode(msgspec.json.encode(value))
    except (TypeError, msgspec.EncodeError) as error:
        raise CrdError(f"{where}: default {value!r} is not JSON: {error}") from None
    return wire or None


def _node(t: mi.Type, where: str, seen: tuple[type, ...]) -> Schema:
    if isinstance(t, mi.Metadata):
        described_by = (t.extra or {}).get(SCHEMA_OF)
        node = _node(mi.type_info(described_by) if described_by else t.type, where, seen)
        extra = dict(t.extra_json_schema or {})
        for key in list(extra):
            if key == "examples":
                examples = extra.pop(key)
                if examples:
                    node["example"] = examples[0]
            elif key not in _PASSTHROUGH and not key.startswith("x-kubernetes-"):
                raise CrdError(f"{where}: JSON schema keyword {key!r} is not allowed in a CRD")
        node.update(extra)
        if extra.get("x-kubernetes-preserve-unknown-fields") and node.get("type") == "object":
            node.pop("additionalProperties", None)
        return node
    if isinstance(t, mi.UnionType):
        return _union(t, where, seen)
    if isinstance(t, mi.StructType):
        return _struct(t, where, seen)
    if isinstance(t, mi.AnyType):
        # Any includes None: without nullable the server would drop an explicit null.
        return {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    if isinstance(t, mi.StrType):
        return _bounds({"type": "string"}, min_length=t.min_length, max_length=t.max_length) | (
            {"pattern": t.pattern} if t.pattern else {}
        )
    if isinstance(t, mi.BoolType):
        return {"type": "boolean"}
    if isinstance(t, (mi.IntType, mi.FloatType)):
        return _numeric({"type": "integer" if isinstance(t, mi.IntType) else "number"}, t)
    if isinstance(t, mi.DateTimeType):
        return {"type": "string", "format": "date-time"}
    if isinstance(t, mi.DateType):
        return {"type": "string", "format": "date"}
    if isinstance(t, mi.UUIDType):
        return {"type": "string", "format": "uuid"}
    if isinstance(t, (mi.BytesType, mi.ByteArrayType)):
        return {"type": "string", "format": "byte"}
    if isinstance(t, mi.LiteralType):
        return _enum(list(t.values), where)
    if isinstance(t, mi.EnumType):
        return _enum([member.value for member in t.cls], where)
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return _array(t, where, seen)
    if isinstance(t, mi.DictType):
        return _dict(t, where, seen)
    raise CrdError(f"{where}: unsupported field type {type(t).__name__} for a CRD schema")


def _bounds(node: Schema, **limits: int | None) -> Schema:
    names = {
        "min_length": "minLength",
        "max_length": "maxLength",
        "min_items": "minItems",
        "max_items": "maxItems",
        "min_props": "minProperties",
        "max_props": "maxProperties",
    }
    node.update((names[k], v) for k, v in limits.items() if v is not None)
    return node


def _numeric(node: Schema, t: mi.IntType | mi.FloatType) -> Schema:
    # OpenAPI v3.0 (what CRDs speak) spells gt/lt as a boolean beside minimum/maximum.
    if t.ge is not None:
        node["minimum"] = t.ge
    if t.gt is not None:
        node["minimum"], node["exclusiveMinimum"] = t.gt, True
    if t.le is not None:
        node["maximum"] = t.le
    if t.lt is not None:
        node["maximum"], node["exclusiveMaximum"] = t.lt, True
    if t.multiple_of is not None:
        node["multipleOf"] = t.multiple_of
    return node


def _enum(values: list[Any], where: str) -> Schema:
    kinds = {type(v) for v in values}
    if kinds <= {str}:
        return {"type": "string", "enum": values}
    if kinds <= {int}:
        return {"type": "integer", "enum": values}
    raise CrdError(f"{where}: enum values must be all strings or all integers, got {values!r}")


def _array(t: Any, where: str, seen: tuple[type, ...]) -> Schema:
    node: Schema = {"type": "array", "items": _node(t.item_type, f"{where}[]", seen)}
    _bounds(node, min_items=t.min_length, max_items=t.max_length)
    item = t.item_type.type if isinstance(t.item_type, mi.Metadata) else t.item_type
    if isinstance(t, (mi.SetType, mi.FrozenSetType)):
        node["x-kubernetes-list-type"] = "set"
    elif isinstance(item, mi.StructType) and issubclass(item.cls, Condition):
        node["x-kubernetes-list-type"] = "map"
        node["x-kubernetes-list-map-keys"] = ["type"]
    return node


def _dict(t: mi.DictType, where: str, seen: tuple[type, ...]) -> Schema:
    if not isinstance(t.key_type, mi.StrType):
        raise CrdError(f"{where}: map keys must be str, got {type(t.key_type).__name__}")
    node: Schema = {"type": "object"}
    _bounds(node, min_props=t.min_length, max_props=t.max_length)
    if isinstance(t.value_type, mi.AnyType):
        node["x-kubernetes-preserve-unknown-fields"] = True
    else:
        node["additionalProperties"] = _node(t.value_type, f"{where}[*]", seen)
    return node


def _union(t: mi.UnionType, where: str, seen: tuple[type, ...]) -> Schema:
    rest = [member for member in t.types if not isinstance(member, mi.NoneType)]
    nullable = len(rest) < len(t.types)
    kinds = sorted(type(member).__name__ for member in rest)
    if len(rest) == 1:
        node = _node(rest[0], where, seen)
    elif kinds == ["IntType", "StrType"]:
        # As controller-gen writes intstr.IntOrString: the anyOf names both types for clients.
        node = {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    else:
        raise CrdError(
            f"{where}: unsupported union of {', '.join(kinds)} (a CRD field has one type; "
            f"only X | None and int | str are expressible)"
        )
    if nullable:
        node["nullable"] = True
    return node


def import_class(spec: str) -> type:
    """``module:Class`` (``Class`` may be dotted) as a class; ValueError in one line."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"{spec!r}: expected module:Class, e.g. myproject.api:Greeting")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{spec!r}: cannot import {module_name}: {error}") from None
    except Exception as error:  # the user's module is broken: say where, in one line
        raise ValueError(
            f"{spec!r}: cannot import {module_name}: {type(error).__name__}: {error}"
            f" ({_raised_at(error)})"
        ) from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{spec!r}: {module_name} has no {qualname}") from None
    if not isinstance(target, type):
        raise ValueError(f"{spec!r}: {qualname} is not a class")
    return target


def _raised_at(error: BaseException) -> str:
    """``file:line`` where ``error`` was raised (a SyntaxError's own position)."""
    if isinstance(error, SyntaxError):
        return f"{error.filename}:{error.lineno}"
    frames = traceback.extract_tb(error.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "unknown"


def classes_of(specs: Iterable[str]) -> list[type]:
    return [import_class(spec) for spec in specs]
