"""Property: for every kind with a protobuf codec, a random object in k8s JSON encodes to
protobuf and decodes back to the same JSON. Strategies are derived from the descriptors, so every
field of every message (inline structs, maps, bytes, Time, IntOrString, Quantity, RawExtension,
FieldsV1) is reachable, and a field the mapping forgets fails here."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrio.api.registry import BUILTIN_KINDS
from kubetrio.emulator.kubepb import codec, jsonmap
from kubetrio.emulator.kubepb.jsonmap import is_map, is_repeated

MAX_DEPTH = 7
EXAMPLES = 40

Json = Any

_json_leaf = st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=6))
_json_value = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=4), inner, max_size=2)
    ),
    max_leaves=4,
)


def _time(micro: bool) -> st.SearchStrategy[str]:
    def fmt(args: tuple[int, int]) -> str:
        seconds, micros = args
        t = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{t}.{micros:06d}Z" if micro else f"{t}Z"

    return st.tuples(st.integers(1, 4_102_444_800), st.integers(0, 999_999)).map(fmt)


SPECIAL: dict[str, st.SearchStrategy[Json]] = {
    jsonmap.TIME: _time(False),
    jsonmap.MICRO_TIME: _time(True),
    jsonmap.INT_OR_STRING: st.one_of(st.integers(-(2**31), 2**31 - 1), st.text(max_size=6)),
    jsonmap.QUANTITY: st.sampled_from(["0", "1", "100m", "1.5Gi", "2e3", "64Mi"]),
    jsonmap.RAW_EXTENSION: st.dictionaries(st.text(max_size=4), _json_value, max_size=3),
    jsonmap.APIEXT_JSON: _json_value,
    jsonmap.FIELDS_V1: st.dictionaries(
        st.sampled_from(["f:metadata", "f:spec", "."]), st.just({}), min_size=1
    ),
    jsonmap.VERBS: st.lists(st.text(max_size=5), max_size=3),
    **dict.fromkeys(jsonmap.EXTRA_VALUES, st.lists(st.text(max_size=5), max_size=3)),
}
assert set(SPECIAL) | jsonmap.UNIONS == jsonmap.SPECIAL
SCHEMA = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
}


def _scalar(fd: FieldDescriptor, nonzero: bool) -> st.SearchStrategy[Json]:
    t = fd.type
    s: st.SearchStrategy[Json]
    if t == FieldDescriptor.TYPE_STRING:
        s = st.text(max_size=8)
    elif t == FieldDescriptor.TYPE_BOOL:
        s = st.booleans()
    elif t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        s = st.integers(lo, hi)
    elif t == FieldDescriptor.TYPE_DOUBLE:
        s = st.floats(allow_nan=False, allow_infinity=False)
    elif t == FieldDescriptor.TYPE_FLOAT:
        s = st.floats(allow_nan=False, allow_infinity=False, width=32)
    elif t == FieldDescriptor.TYPE_BYTES:
        s = st.binary(max_size=8).map(lambda b: base64.b64encode(b).decode())
    else:
        raise AssertionError(f"no strategy for {fd.full_name} (type {t})")
    # Go's encoding/json drops a zero non-pointer scalar tagged omitempty.
    return s.filter(bool) if nonzero else s


@cache
def message_json(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[Json]:
    special = SPECIAL.get(desc.full_name)
    if special is not None:
        return special
    if desc.full_name in jsonmap.UNIONS:
        schema = message_json(desc.file.pool.FindMessageTypeByName(SCHEMA), depth + 1)
        other = {
            jsonmap.SCHEMA_OR_BOOL: st.booleans(),
            jsonmap.SCHEMA_OR_ARRAY: st.lists(schema, min_size=1, max_size=2),
            jsonmap.SCHEMA_OR_STRINGS: st.lists(st.text(max_size=5), min_size=1, max_size=3),
        }[desc.full_name]
        return st.one_of(schema, other)
    if depth > MAX_DEPTH:
        return st.just({})
    jm = codec.jsonmap()
    inline, omitempty = jm.inline(desc), jm.omitempty(desc)
    optional: dict[str, st.SearchStrategy[Json]] = {}
    embedded: list[st.SearchStrategy[Json]] = []
    for fd in desc.fields:
        if fd.number in inline:
            assert fd.message_type is not None
            embedded.append(message_json(fd.message_type, depth))
            continue
        key = jm.json_names(desc).get(fd.number, fd.name)
        optional[key] = _field(fd, depth, fd.number in omitempty)
    base = st.fixed_dictionaries({}, optional=optional)
    if not embedded:
        return base

    def merge(parts: tuple[dict[str, Json], ...]) -> dict[str, Json]:
        out: dict[str, Json] = {}
        for p in parts:
            assert not set(p) & set(out), "inline field names collide"
            out.update(p)
        return out

    return st.tuples(base, *embedded).map(merge)


def _field(fd: FieldDescriptor, depth: int, omitempty: bool) -> st.SearchStrategy[Json]:
    if is_map(fd):
        entry = fd.message_type
        assert entry is not None
        value = _value(entry.fields_by_name["value"], depth)
        # An empty map and an absent one are the same on the wire (and in Go's omitempty JSON).
        return st.dictionaries(st.text(max_size=6), value, min_size=1, max_size=2)
    if is_repeated(fd):
        return st.lists(_value(fd, depth), min_size=1, max_size=2)
    if fd.message_type is not None:
        return message_json(fd.message_type, depth + 1)
    return _scalar(fd, omitempty)


def _value(fd: FieldDescriptor, depth: int) -> st.SearchStrategy[Json]:
    if fd.message_type is not None:
        return message_json(fd.message_type, depth + 1)
    return _scalar(fd, False)


# Create-only kinds (reviews, TokenRequest) kubectl 1.32+ sends as protobuf.
REVIEWS = [
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("authentication.k8s.io/v1", "TokenReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
]


def _kinds() -> list[tuple[str, str]]:
    out = [("v1", "Status"), ("meta.k8s.io/v1", "DeleteOptions"), ("v1", "WatchEvent"), *REVIEWS]
    for k in BUILTIN_KINDS:
        if codec.has_codec(k.api_version, k.kind):
            out += [(k.api_version, k.kind), (k.api_version, k.kind + "List")]
    return out


KINDS = _kinds()


# Served as JSON only until tools/regen_kubepb.py is run again with their groups' .proto files.
JSON_ONLY = {
    "CertificateSigningRequest",
    "DeviceClass",
    "EndpointSlice",
    "FlowSchema",
    "HorizontalPodAutoscaler",
    "PriorityLevelConfiguration",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "RuntimeClass",
}


def test_every_builtin_kind_has_a_codec() -> None:
    missing = {k.kind for k in BUILTIN_KINDS if not codec.has_codec(k.api_version, k.kind)}
    assert missing == JSON_ONLY
    assert len(KINDS) == 3 + len(REVIEWS) + 2 * (len(BUILTIN_KINDS) - len(JSON_ONLY))


@pytest.mark.slow
@pytest.mark.parametrize(("api_version", "kind"), KINDS, ids=[k for _, k in KINDS])
def test_json_protobuf_json_roundtrip(api_version: str, kind: str) -> None:
    cls = codec.class_for(api_version, kind)
    assert cls is not None

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(message_json(cls.DESCRIPTOR))
    def roundtrip(obj: dict[str, Any]) -> None:
        body = codec.encode(obj, api_version, kind, lenient=False)
        assert body.startswith(b"k8s\x00")
        assert codec.decode(body) == {"kind": kind, "apiVersion": api_version, **obj}

    roundtrip()
