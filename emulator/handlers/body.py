"""Request bodies: decoded by their Content-Type (protobuf for built-in kinds, JSON otherwise),
checked to be the resource's own kind, and the ``fieldValidation`` warnings a write's body
earns. Create, update, patch, delete and the subresources all read bodies this one way, as
kube's handlers share one decoder negotiation."""

from __future__ import annotations

from typing import Any

import msgspec
import yaml

from kubetrio.emulator import errors, fieldcheck
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.http import Request
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.kubepb import negotiate as pbneg
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.meta import check_type_meta
from kubetrio.emulator.schema_admit import field_validation


def decode_json(body: bytes) -> Any:
    if not body:
        raise errors.bad_request("the request body is empty")
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None


def read_body(req: Request, rt: ResourceType, expect: tuple[str, str] | None = None) -> Any:
    """A request body by its Content-Type: protobuf for built-in kinds, otherwise JSON.
    ``expect`` names the kind an endpoint takes when it is not the resource's own (an
    Eviction, a Binding, DeleteOptions, a TokenRequest): a protobuf body without type meta
    decodes as that, as Go decodes "into" the handler's type."""
    ctype = req.header("content-type")
    if pbneg.is_protobuf_body(ctype):
        return pb.read_body(req.body, rt, expect)
    media = ctype.split(";")[0].strip().lower()
    if media in ("application/yaml", "application/x-yaml", "text/yaml"):
        return decode_yaml(req.body)
    if media not in ("", "application/json", "*/*"):
        raise unreadable(rt)
    return decode_json(req.body)


def unreadable(rt: ResourceType) -> errors.ApiError:
    """415 for a body in a media type the resource is not served in (custom resources take
    no protobuf)."""
    kinds = "application/json, application/yaml"
    if rt.builtin:
        kinds += ", application/vnd.kubernetes.protobuf"
    return errors.ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {kinds}",
    )


def decode_yaml(body: bytes) -> Any:
    """A YAML body, read as the JSON it stands for (the apiserver converts it so)."""
    if not body:
        raise errors.bad_request("the request body is empty")
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"the request body is not valid YAML: {exc}") from None


def body_object(req: Request, t: Target) -> dict[str, Any]:
    """The object a create or update carries, of the resource's kind in a served version."""
    api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
    return check_type_meta(
        read_body(req, t.rt), (t.rt.api_version(t.version), *api_versions), t.rt.kind
    )


def field_warnings(
    backend: Backend,
    req: Request,
    t: Target,
    obj: dict[str, Any],
    operation: str,
    body: bytes | None,
) -> list[tuple[str, str]]:
    """fieldValidation: built-in kinds against their OpenAPI schema (what decoding into the
    Go type does), custom resources against their CRD's structural schema; returns the
    Warning headers to send."""
    if body is not None and pbneg.is_protobuf_body(req.header("content-type")):
        body = None  # repeated keys are a JSON matter
    if t.rt.builtin:
        return fieldcheck.check(t.rt, t.version, obj, req.query, body, operation)
    crd = backend.store.crd_of(t.rt)
    return field_validation(crd, obj, req.query.get("fieldValidation"), body)
