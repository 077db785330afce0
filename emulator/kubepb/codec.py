"""Built-in kinds as protobuf: which kinds have a message, and the ``k8s\\x00`` envelope.

The descriptors are compiled from k8s.io/api's, apimachinery's and apiextensions-apiserver's
generated.proto files
(tools/regen_kubepb.py) and loaded once into a private descriptor pool, so message classes are
built from the same schema the apiserver serves rather than hand-written.

A protobuf body is ``k8s\\x00`` followed by a runtime.Unknown whose typeMeta names the kind and
whose raw field holds the typed message (which itself has no apiVersion/kind fields).
"""

from __future__ import annotations

import json
import struct
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from kubetrio.emulator.kubepb.jsonmap import JsonMap, MappingError

MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
# Kinds of metav1 that travel under any group's apiVersion (the apiserver registers them in every
# group version).
META_KINDS = frozenset({"Status", "WatchEvent", "DeleteOptions", "List"})


class CodecError(Exception):
    """A protobuf body that cannot be read: the message says why."""


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    data = resources.files(__package__).joinpath("k8s.fds").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        pool.Add(f)
    return pool


@cache
def jsonmap() -> JsonMap:
    tags = json.loads(resources.files(__package__).joinpath("gotags.json").read_text())
    return JsonMap(tags)


@lru_cache(maxsize=1024)  # bounded: the names come from request bodies
def message_class(full_name: str) -> type[Message] | None:
    try:
        desc = _pool().FindMessageTypeByName(full_name)
    except KeyError:
        return None
    return message_factory.GetMessageClass(desc)


# Groups whose types live outside k8s.io/api.
_PACKAGES = {"apiextensions.k8s.io": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions"}


def _package(api_version: str) -> str:
    """The proto package of a built-in group version: k8s.io/api's is the group's first label."""
    group, _, version = api_version.rpartition("/")
    base = _PACKAGES.get(group) or f"k8s.io.api.{group.split('.')[0] if group else 'core'}"
    return f"{base}.{version}"


def class_for(api_version: str, kind: str) -> type[Message] | None:
    """The message of a built-in kind (or its List), or of a metav1 kind; None if it has none."""
    if kind in META_KINDS:
        return message_class(f"{_META}.{kind}")
    return message_class(f"{_package(api_version)}.{kind}")


def has_codec(api_version: str, kind: str) -> bool:
    return class_for(api_version, kind) is not None


def _unknown() -> Message:
    cls = message_class(UNKNOWN)
    assert cls is not None
    return cls()


def wrap(api_version: str, kind: str, raw: bytes) -> bytes:
    """Envelope an encoded message under ``apiVersion``/``kind``."""
    env: Any = _unknown()
    env.typeMeta.apiVersion = api_version
    env.typeMeta.kind = kind
    env.raw = raw
    return MAGIC + bytes(env.SerializeToString())


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message) of an enveloped body."""
    if not body.startswith(MAGIC):
        raise CodecError("the protobuf body does not start with the k8s\\x00 envelope prefix")
    env: Any = _unknown()
    try:
        env.ParseFromString(body[len(MAGIC) :])
    except DecodeError as exc:
        raise CodecError(f"the protobuf envelope is malformed: {exc}") from None
    if env.contentEncoding:
        raise CodecError(f"unsupported content encoding {env.contentEncoding!r}")
    return env.typeMeta.apiVersion, env.typeMeta.kind, bytes(env.raw)


def encode(obj: dict[str, Any], api_version: str, kind: str, lenient: bool = True) -> bytes:
    """An object (k8s JSON as a dict) as an enveloped protobuf body. ``lenient`` leaves out
    fields whose JSON value does not fit the schema instead of failing."""
    cls = class_for(api_version, kind)
    if cls is None:
        raise CodecError(f"{kind} in {api_version} has no protobuf serialization")
    msg = cls()
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    try:
        jsonmap().from_json(msg, body, lenient=lenient)
    except MappingError as exc:
        raise CodecError(f"cannot encode {kind} as protobuf: {exc}") from None
    return wrap(api_version, kind, msg.SerializeToString())


def decode(body: bytes) -> dict[str, Any]:
    """An enveloped protobuf body as k8s JSON (a dict with apiVersion and kind set)."""
    api_version, kind, raw = unwrap(body)
    return decode_raw(api_version, kind, raw)


def decode_raw(api_version: str, kind: str, raw: bytes) -> dict[str, Any]:
    cls = class_for(api_version, kind)
    if cls is None:
        raise CodecError(f"no protobuf serialization is known for {kind} in {api_version!r}")
    msg = cls()
    try:
        msg.ParseFromString(raw)
        obj = jsonmap().to_json(msg)
    except (DecodeError, ValueError, UnicodeDecodeError) as exc:
        raise CodecError(f"the {kind} message is malformed: {exc}") from None
    return {"kind": kind, "apiVersion": api_version, **obj}


def frame(data: bytes) -> bytes:
    """One frame of a protobuf watch stream: a 4-byte big-endian length, then the bytes."""
    return struct.pack(">I", len(data)) + data


def watch_event(type_: str, enveloped_object: bytes) -> bytes:
    """One frame of a protobuf watch: a bare metav1.WatchEvent (the stream serializer writes no
    envelope) whose object holds the enveloped object."""
    cls = message_class(f"{_META}.WatchEvent")
    assert cls is not None
    ev: Any = cls()
    ev.type = type_
    ev.object.raw = enveloped_object
    return frame(ev.SerializeToString())
