"""/openapi/v2 as protobuf: the swagger JSON document mapped onto gnostic's OpenAPIv2 messages
and encoded by the ``protobuf`` library (descriptor set compiled by
``tools/build_openapiv2_descriptor.py``).

client-go only ever asks for this form, and kubectl 1.27/1.28 need it: ``explain`` reads it,
and ``apply --validate`` checks in it whether PATCH takes ``fieldValidation``.

The mapping follows gnostic's compiler: JSON keys become snake_case fields (``$ref`` is
``_ref``), ``x-`` keys become vendor extensions holding YAML (JSON is YAML), objects keyed by
name become repeated ``Named*`` pairs, and a few wrapper messages choose a oneof branch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

import msgspec
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

MIME = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
MIMES = (MIME, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")


@functools.cache
def _document_class() -> type[Message]:
    data = resources.files("kubetrio.emulator").joinpath("openapiv2.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("openapi.v2.Document"))


def encode(doc: dict[str, Any]) -> bytes:
    msg = _document_class()()
    _fill(msg, doc)
    return bytes(msg.SerializeToString(deterministic=True))


def decode(data: bytes) -> Message:
    """Parse an encoded document (tests read back what was served)."""
    msg = _document_class()()
    msg.ParseFromString(data)
    return msg


def _snake(key: str) -> str:
    if key == "$ref":
        return "_ref"
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def _yaml(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _fill(msg: Any, node: Any) -> None:
    msg.SetInParent()
    special = _SPECIAL.get(msg.DESCRIPTOR.name)
    if special is not None:
        special(msg, node)
        return
    if not isinstance(node, dict):
        return
    fields = msg.DESCRIPTOR.fields_by_name
    named = next(
        (
            f.name
            for f in msg.DESCRIPTOR.fields
            if f.is_repeated
            and f.message_type is not None
            and f.message_type.name.startswith("Named")
            and f.name != "vendor_extension"
        ),
        None,
    )
    for key, value in node.items():
        field = fields.get(_snake(key))
        if key.startswith("x-") and "vendor_extension" in fields:
            ext = msg.vendor_extension.add()
            ext.name = key
            ext.value.yaml = _yaml(value)
        elif named is not None and (field is None or named == "additional_properties"):
            pair = getattr(msg, named).add()
            pair.name = key
            _fill(pair.value, value)
        elif field is not None:
            try:
                _set(msg, field, value)
            except (TypeError, ValueError):
                # A value of the wrong JSON type (a CRD schema can say anything): gnostic's
                # compiler would reject the document; leaving the field out keeps it usable.
                msg.ClearField(field.name)


def _set(msg: Any, field: Any, value: Any) -> None:
    repeated = field.is_repeated
    target = getattr(msg, field.name)
    if field.message_type is None:
        if repeated:
            target.extend(value if isinstance(value, list) else [value])
        elif field.type == FieldDescriptor.TYPE_STRING:
            setattr(msg, field.name, str(value))
        else:
            setattr(msg, field.name, value)
    elif field.message_type.name == "Any":
        if repeated:
            for v in value:
                target.add().yaml = _yaml(v)
        else:
            target.yaml = _yaml(value)
    elif repeated:
        for v in value if isinstance(value, list) else [value]:
            _fill(target.add(), v)
    else:
        _fill(target, value)


def _type_item(msg: Any, node: Any) -> None:
    msg.value.extend(node if isinstance(node, list) else [node])


def _items_item(msg: Any, node: Any) -> None:
    for schema in node if isinstance(node, list) else [node]:
        _fill(msg.schema.add(), schema)


def _additional(msg: Any, node: Any) -> None:
    if isinstance(node, bool):
        msg.boolean = node
    else:
        _fill(msg.schema, node)


def _parameters_item(msg: Any, node: Any) -> None:
    if "$ref" in node:
        _fill(msg.json_reference, node)
        return
    where = node.get("in")
    if where == "body":
        _fill(msg.parameter.body_parameter, node)
        return
    branch = {
        "query": "query_parameter_sub_schema",
        "path": "path_parameter_sub_schema",
        "header": "header_parameter_sub_schema",
        "formData": "form_data_parameter_sub_schema",
    }.get(where or "", "query_parameter_sub_schema")
    _fill(getattr(msg.parameter.non_body_parameter, branch), node)


def _response_value(msg: Any, node: Any) -> None:
    _fill(msg.json_reference if "$ref" in node else msg.response, node)


def _schema_item(msg: Any, node: Any) -> None:
    _fill(msg.file_schema if node.get("type") == "file" else msg.schema, node)


_SPECIAL: dict[str, Callable[[Any, Any], None]] = {
    "TypeItem": _type_item,
    "ItemsItem": _items_item,
    "AdditionalPropertiesItem": _additional,
    "ParametersItem": _parameters_item,
    "ResponseValue": _response_value,
    "SchemaItem": _schema_item,
}
