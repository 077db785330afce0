"""Rules for the kinds controllers watch that the emulator serves as stored objects
(ControllerRevision, EndpointSlice): the few a client meets first, so a bad object is refused
as a cluster refuses it (``k8s.io/kubernetes/pkg/apis/apps/validation`` and
``pkg/apis/discovery/validation``)."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]


def _go_json(value: Any) -> str:
    """A RawExtension as field.Invalid prints it: its compact JSON bytes."""
    return json.dumps(value, separators=(",", ":"))


def revision_create(obj: Obj, causes: Causes) -> None:
    revision = obj.get("revision")
    if isinstance(revision, int) and revision < 0:
        causes.invalid("revision", revision, "must be greater than or equal to 0")


def revision_update(new: Obj, old: Obj, causes: Causes) -> None:
    """Only metadata may change: data and revision are immutable."""
    if new.get("data") != old.get("data"):
        causes.items.append(
            (
                "FieldValueInvalid",
                "data",
                f"Invalid value: {_go_json(new.get('data'))}: field is immutable",
            )
        )
    revision_create(new, causes)


def slice_create(obj: Obj, causes: Causes) -> None:
    kind = obj.get("addressType")
    if not kind:
        causes.required("addressType")
    elif kind not in _ADDRESS_TYPES:
        causes.unsupported("addressType", kind, _ADDRESS_TYPES)


def slice_update(new: Obj, old: Obj, causes: Causes) -> None:
    slice_create(new, causes)
    if new.get("addressType") != old.get("addressType"):
        causes.invalid("addressType", new.get("addressType"), "field is immutable")


RULES = {
    "controllerrevisions.apps": (revision_create, revision_update, None),
    "endpointslices.discovery.k8s.io": (slice_create, slice_update, None),
}
