"""Protobuf on the REST surface: reading request bodies and writing objects, lists, Status and
watch events as enveloped protobuf. The REST handlers (``handlers/``) call in here only after
negotiation chose protobuf, so the JSON path is untouched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.http import Response
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.kubepb import codec
from kubetrio.emulator.kubepb.negotiate import (
    PROTOBUF,
    plain_json,
    protobuf_response,
    unsupported_body,
)


def has_codec(rt: ResourceType) -> bool:
    """Built-in kinds with a message; custom resources never have one, whatever their name."""
    return rt.builtin and codec.has_codec(rt.api_version(), rt.kind)


def wants_protobuf(accept: str, rt: ResourceType) -> bool:
    """Whether the response for ``rt`` is protobuf (406 when nothing acceptable is served)."""
    if plain_json(accept):
        return False
    return protobuf_response(accept, has_codec(rt), rt.builtin)


# Kinds every resource's endpoints take whatever the resource (custom ones included).
_META_BODIES = frozenset({("meta.k8s.io/v1", "DeleteOptions")})


def read_body(
    body: bytes, rt: ResourceType, expect: tuple[str, str] | None = None
) -> dict[str, Any]:
    """A protobuf request body as k8s JSON; 415 for a kind served without protobuf.
    ``expect`` is the kind the endpoint takes when it is not the resource's own."""
    if not has_codec(rt) and expect not in _META_BODIES:
        raise unsupported_body(False)
    if not body:
        raise errors.bad_request("the request body is empty")
    try:
        api_version, kind, raw = codec.unwrap(body)
        if not kind:  # an envelope without typeMeta: the endpoint's type, as Go decodes "into"
            api_version, kind = expect or (rt.api_version(), rt.kind)
        return codec.decode_raw(api_version, kind, raw)
    except codec.CodecError as exc:
        raise errors.bad_request(f"the request body is not valid protobuf: {exc}") from None


def object_response(
    rt: ResourceType,
    version: str,
    obj: dict[str, Any],
    code: int,
    headers: list[tuple[str, str]] | None = None,
) -> Response:
    body = codec.encode(obj, rt.api_version(version), rt.kind)
    return Response(code, body, PROTOBUF, headers=headers or [])


def review_response(answer: dict[str, Any]) -> Response:
    """A review or TokenRequest answer (its own kind, not the URL's resource)."""
    body = codec.encode(answer, str(answer["apiVersion"]), str(answer["kind"]))
    return Response(201, body, PROTOBUF)


def list_response(
    rt: ResourceType, version: str, meta: dict[str, Any], objs: list[dict[str, Any]]
) -> Response:
    body = codec.encode(
        {"metadata": meta, "items": objs}, rt.api_version(version), rt.kind + "List"
    )
    return Response(200, body, PROTOBUF)


def status_response(
    status: dict[str, Any], code: int, headers: list[tuple[str, str]] | None = None
) -> Response:
    return Response(code, codec.encode(status, "v1", "Status"), PROTOBUF, headers or [])


def watch_encoder(rt: ResourceType, version: str) -> Callable[[str, Entry], bytes]:
    """Frames for a protobuf watch: each a length-prefixed WatchEvent whose object is the
    enveloped object (bookmarks included: they are objects with only metadata)."""
    api_version = rt.api_version(version)

    def encode(type_: str, entry: Entry) -> bytes:
        inner = codec.encode(entry.obj, api_version, rt.kind)
        return codec.watch_event(type_, inner)

    return encode


def watch_error(status: dict[str, Any]) -> bytes:
    """An ERROR event (410 Expired and the like) carrying a Status."""
    return codec.watch_event("ERROR", codec.encode(status, "v1", "Status"))
