"""Kubernetes' JSON form of a protobuf message, both ways, driven by the descriptors.

This is k8s's mapping, not proto3-JSON: field names are the .proto names (which are the JSON
names), int64 stays a number, and a handful of apimachinery types have a JSON form of their own
(Time as RFC3339, IntOrString as int or string, Quantity as a string, RawExtension/FieldsV1 as
embedded JSON). Go structs embedded with an empty JSON name are flattened into their parent, and
a non-pointer scalar tagged ``omitempty`` is dropped when zero, as Go's encoding/json would; both
facts come from the Go struct tags (gotags.json, written by tools/regen_kubepb.py).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
TIME = _META + "Time"
MICRO_TIME = _META + "MicroTime"
FIELDS_V1 = _META + "FieldsV1"
VERBS = _META + "Verbs"
# Go ``[]string`` types that protobuf wraps in a message but JSON shows as a plain list.
EXTRA_VALUES = (
    "k8s.io.api.authentication.v1.ExtraValue",
    "k8s.io.api.authorization.v1.ExtraValue",
)
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
APIEXT_JSON = _APIEXT + "JSON"
SCHEMA_OR_ARRAY = _APIEXT + "JSONSchemaPropsOrArray"
SCHEMA_OR_BOOL = _APIEXT + "JSONSchemaPropsOrBool"
SCHEMA_OR_STRINGS = _APIEXT + "JSONSchemaPropsOrStringArray"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Go's zero time.Time as Unix seconds: what a non-pointer Time field carries when unset.
_GO_ZERO_SECONDS = -62135596800

GoTags = dict[str, dict[str, Any]]  # message -> inline/omitempty field numbers, JSON names


class MappingError(Exception):
    """A JSON value that does not fit its protobuf field; names the field path."""


def _time_out(msg: Any, micro: bool) -> str | None:
    seconds, nanos = msg.seconds, msg.nanos
    if seconds in (0, _GO_ZERO_SECONDS) and nanos == 0:
        return None  # Go's zero time marshals as JSON null
    t = datetime.fromtimestamp(seconds, UTC)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_in(msg: Any, value: Any) -> None:
    if not isinstance(value, str):
        raise MappingError(f"expected an RFC3339 time string, got {type(value).__name__}")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise MappingError(f"invalid RFC3339 time {value!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    delta = t - _EPOCH
    msg.seconds = delta.days * 86400 + delta.seconds
    msg.nanos = delta.microseconds * 1000


def _int_or_string_out(msg: Any) -> int | str:
    return str(msg.strVal) if msg.type == 1 else int(msg.intVal)


def _int_or_string_in(msg: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MappingError(f"expected an int or a string, got {type(value).__name__}")
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
    else:
        msg.type, msg.intVal = 0, value


def _quantity_in(msg: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise MappingError(f"expected a quantity string, got {type(value).__name__}")
    msg.string = value if isinstance(value, str) else str(value)


def _raw_out(raw: bytes) -> Any:
    return msgspec.json.decode(raw) if raw else None


def _raw_in(value: Any) -> bytes:
    return msgspec.json.encode(value)


def _set_raw(field: str) -> Callable[[Any, Any], None]:
    def set_raw(msg: Any, value: Any) -> None:
        setattr(msg, field, _raw_in(value))

    return set_raw


def _verbs_in(msg: Any, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MappingError("expected a list of strings")
    msg.items.extend(value)


_OUT: dict[str, Callable[[Any], Any]] = {
    TIME: lambda m: _time_out(m, False),
    MICRO_TIME: lambda m: _time_out(m, True),
    INT_OR_STRING: _int_or_string_out,
    QUANTITY: lambda m: str(m.string),
    RAW_EXTENSION: lambda m: _raw_out(m.raw),
    APIEXT_JSON: lambda m: _raw_out(m.raw),
    FIELDS_V1: lambda m: _raw_out(m.Raw),
    VERBS: lambda m: list(m.items),
    **{name: (lambda m: list(m.items)) for name in EXTRA_VALUES},
}
_IN: dict[str, Callable[[Any, Any], None]] = {
    TIME: _time_in,
    MICRO_TIME: _time_in,
    INT_OR_STRING: _int_or_string_in,
    QUANTITY: _quantity_in,
    RAW_EXTENSION: _set_raw("raw"),
    APIEXT_JSON: _set_raw("raw"),
    FIELDS_V1: _set_raw("Raw"),
    VERBS: _verbs_in,
    **dict.fromkeys(EXTRA_VALUES, _verbs_in),
}
# JSON-schema unions (apiextensions): one of a schema, a list or a bool, by the JSON value's type.
UNIONS = frozenset({SCHEMA_OR_ARRAY, SCHEMA_OR_BOOL, SCHEMA_OR_STRINGS})
SPECIAL = frozenset(_OUT) | UNIONS

_INTS = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_FLOATS = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})


def is_map(fd: FieldDescriptor) -> bool:
    mt = fd.message_type
    return mt is not None and mt.GetOptions().map_entry


def is_repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


class JsonMap:
    """Converts between k8s JSON (plain dicts) and protobuf messages of one descriptor pool."""

    def __init__(self, gotags: GoTags) -> None:
        self._tags = gotags
        self._cache: dict[str, tuple[frozenset[int], frozenset[int], dict[int, str]]] = {}
        self._plans: dict[str, dict[str, tuple[tuple[FieldDescriptor, ...], FieldDescriptor]]] = {}

    def inline(self, desc: Descriptor) -> frozenset[int]:
        """Numbers of the fields that are Go structs embedded inline (flattened in JSON)."""
        return self._sets(desc)[0]

    def omitempty(self, desc: Descriptor) -> frozenset[int]:
        """Numbers of the non-pointer fields Go's JSON drops when zero."""
        return self._sets(desc)[1]

    def json_names(self, desc: Descriptor) -> dict[int, str]:
        """Field number -> JSON name, where it is not the proto name (``$ref``, ``apiGroup``)."""
        return self._sets(desc)[2]

    def _sets(self, desc: Any) -> tuple[frozenset[int], frozenset[int], dict[int, str]]:
        sets = self._cache.get(desc.full_name)
        if sets is None:
            tags = self._tags.get(desc.full_name, {})
            sets = (
                frozenset(tags.get("inline", ())),
                frozenset(tags.get("omitempty", ())),
                {int(k): v for k, v in tags.get("names", {}).items()},
            )
            self._cache[desc.full_name] = sets
        return sets

    # -- message -> JSON ---------------------------------------------------------------------

    def to_json(self, msg: Message) -> Any:
        desc = msg.DESCRIPTOR
        special = _OUT.get(desc.full_name)
        if special is not None:
            return special(msg)
        if desc.full_name in UNIONS:
            return self._union_out(msg)
        inline, omitempty, names = self._sets(desc)
        out: dict[str, Any] = {}
        for fd, value in msg.ListFields():
            key = names.get(fd.number, fd.name)
            if fd.number in inline:
                out.update(self.to_json(value))
            elif is_map(fd):
                vfd = _map_value(fd)
                out[key] = {k: self._value_out(vfd, v) for k, v in value.items()}
            elif is_repeated(fd):
                out[key] = [self._value_out(fd, v) for v in value]
            elif fd.number in omitempty and fd.message_type is None and not value:
                continue
            else:
                out[key] = self._value_out(fd, value)
        return out

    def _union_out(self, msg: Any) -> Any:
        """Go's MarshalJSON of the schema unions: the list if any, else the schema, else the
        bool (OrBool) or null."""
        name = msg.DESCRIPTOR.full_name
        if name == SCHEMA_OR_BOOL:
            return self.to_json(msg.schema) if msg.HasField("schema") else bool(msg.allows)
        items = msg.jSONSchemas if name == SCHEMA_OR_ARRAY else msg.property
        if items:
            return [self.to_json(i) for i in items] if name == SCHEMA_OR_ARRAY else list(items)
        return self.to_json(msg.schema) if msg.HasField("schema") else None

    def _union_in(self, msg: Any, data: Any, where: str, lenient: bool) -> None:
        name = msg.DESCRIPTOR.full_name
        if isinstance(data, dict):
            if name == SCHEMA_OR_BOOL:
                msg.allows = True
            self.from_json(msg.schema, data, where, lenient)
        elif name == SCHEMA_OR_BOOL and isinstance(data, bool):
            msg.allows = data
        elif name == SCHEMA_OR_ARRAY and isinstance(data, list):
            for i, item in enumerate(data):
                self.from_json(msg.jSONSchemas.add(), item, f"{where}[{i}]", lenient)
        elif name == SCHEMA_OR_STRINGS and isinstance(data, list):
            if not all(isinstance(v, str) for v in data):
                raise MappingError(f"{where}: expected a list of strings")
            msg.property.extend(data)
        else:
            raise MappingError(f"{where or '<root>'}: unexpected {type(data).__name__} value")

    def _value_out(self, fd: FieldDescriptor, value: Any) -> Any:
        if fd.message_type is not None:
            return self.to_json(value)
        if fd.type == FieldDescriptor.TYPE_BYTES:
            return base64.b64encode(value).decode("ascii")
        return value

    # -- JSON -> message ---------------------------------------------------------------------

    def _plan(self, desc: Any) -> dict[str, tuple[tuple[FieldDescriptor, ...], FieldDescriptor]]:
        """JSON key -> (inline fields to descend through, the field): flattening undone."""
        plan = self._plans.get(desc.full_name)
        if plan is None:
            plan = {}
            inline = self.inline(desc)
            names = self.json_names(desc)
            for fd in desc.fields:
                if fd.number in inline:
                    for key, (path, leaf) in self._plan(fd.message_type).items():
                        plan.setdefault(key, ((fd, *path), leaf))
                else:
                    plan[names.get(fd.number, fd.name)] = ((), fd)
            self._plans[desc.full_name] = plan
        return plan

    def from_json(self, msg: Message, data: Any, where: str = "", lenient: bool = False) -> None:
        """Fill ``msg`` from ``data``; keys the message has no field for are dropped, as a
        typed decoder drops them. Raises MappingError naming the field on a misfit, unless
        ``lenient``: then a misfit field is left out (a stored object the emulator took in as
        JSON is served even if a field could never have been held by a typed server)."""
        desc = msg.DESCRIPTOR
        special = _IN.get(desc.full_name)
        if special is not None:
            try:
                special(msg, data)
            except MappingError as exc:
                raise MappingError(f"{where or '<root>'}: {exc}") from None
            return
        if desc.full_name in UNIONS:
            self._union_in(msg, data, where, lenient)
            return
        if not isinstance(data, dict):
            raise MappingError(f"{where or '<root>'}: expected an object")
        msg.SetInParent()
        plan = self._plan(desc)
        for key, value in data.items():
            step = plan.get(key)
            if step is None or value is None:
                continue
            path, fd = step
            target: Any = msg
            for inl in path:
                target = getattr(target, inl.name)
            try:
                self._set(target, fd, value, f"{where}.{key}" if where else key, lenient)
            except MappingError:
                if not lenient:
                    raise

    def _set(self, target: Any, fd: FieldDescriptor, value: Any, where: str, lenient: bool) -> None:
        if is_map(fd):
            if not isinstance(value, dict):
                raise MappingError(f"{where}: expected an object")
            vfd = _map_value(fd)
            container = getattr(target, fd.name)
            for k, v in value.items():
                if v is None:
                    continue
                if vfd.message_type is not None:
                    self.from_json(container[k], v, f"{where}.{k}", lenient)
                else:
                    try:
                        container[k] = _scalar_in(vfd, v, f"{where}.{k}")
                    except (ValueError, TypeError) as exc:
                        raise MappingError(f"{where}.{k}: {exc}") from None
        elif is_repeated(fd):
            if not isinstance(value, list):
                raise MappingError(f"{where}: expected a list")
            container = getattr(target, fd.name)
            for i, item in enumerate(value):
                if fd.message_type is not None:
                    if item is None and fd.message_type.full_name not in _IN:
                        item = {}  # a null struct in a list decodes as Go's zero struct
                    self.from_json(container.add(), item, f"{where}[{i}]", lenient)
                elif item is not None:
                    try:
                        container.append(_scalar_in(fd, item, f"{where}[{i}]"))
                    except (ValueError, TypeError) as exc:
                        raise MappingError(f"{where}[{i}]: {exc}") from None
        elif fd.message_type is not None:
            self.from_json(getattr(target, fd.name), value, where, lenient)
        else:
            try:
                setattr(target, fd.name, _scalar_in(fd, value, where))
            except (ValueError, TypeError) as exc:  # e.g. out of int32 range
                raise MappingError(f"{where}: {exc}") from None


def _map_value(fd: FieldDescriptor) -> FieldDescriptor:
    entry = fd.message_type
    assert entry is not None
    return entry.fields_by_name["value"]


def _scalar_in(fd: FieldDescriptor, value: Any, where: str) -> Any:
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        if isinstance(value, str):
            return value
    elif t == FieldDescriptor.TYPE_BOOL:
        if isinstance(value, bool):
            return value
    elif t in _INTS:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif t in _FLOATS:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif t == FieldDescriptor.TYPE_BYTES and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise MappingError(f"{where}: illegal base64 data") from None
    raise MappingError(f"{where}: unexpected {type(value).__name__} value")
