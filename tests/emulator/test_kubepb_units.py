"""The pure pieces of protobuf support: Accept negotiation and the JSON shapes Go would print
for values JSON-generated objects never contain (zero times, zero omitempty scalars)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.kubepb import codec
from kubetrio.emulator.kubepb.negotiate import (
    PROTOBUF,
    is_protobuf_body,
    protobuf_response,
    status_protobuf,
)


@pytest.mark.parametrize(
    ("accept", "has_codec", "want"),
    [
        ("", True, False),
        ("application/json", True, False),
        (f"{PROTOBUF}, application/json", True, True),
        (f"{PROTOBUF}, application/json", False, False),
        (f"application/json, {PROTOBUF}", True, False),
        (f"application/json;q=0.5, {PROTOBUF}", True, True),
        (f"{PROTOBUF};q=0.1, */*;q=0.2", True, False),
        (f"{PROTOBUF};stream=watch", True, True),
        (f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1, application/json", True, False),
        ("application/*", True, False),
    ],
)
def test_negotiation(accept: str, has_codec: bool, want: bool) -> None:
    assert protobuf_response(accept, has_codec, True) is want


@pytest.mark.parametrize(
    ("accept", "builtin"),
    [(PROTOBUF, False), ("text/html", True), (f"{PROTOBUF};q=0, application/json;q=0", True)],
)
def test_not_acceptable(accept: str, builtin: bool) -> None:
    with pytest.raises(ApiError) as err:
        protobuf_response(accept, builtin, builtin)
    assert (err.value.code, err.value.reason) == (406, "NotAcceptable")
    assert ("protobuf" in err.value.message) is builtin
    # Errors themselves never 406: they fall back to JSON.
    assert status_protobuf(accept) is (accept == PROTOBUF)


def test_content_type() -> None:
    assert is_protobuf_body(f"{PROTOBUF}; charset=binary")
    assert not is_protobuf_body("application/json")


def pod_message() -> Any:
    cls = codec.class_for("v1", "Pod")
    assert cls is not None
    return cls()


def test_go_zero_values_read_as_go_prints_them() -> None:
    pod = pod_message()
    pod.metadata.name = "p"
    # Go writes a non-pointer zero Time as its Unix seconds; JSON shows null.
    pod.metadata.creationTimestamp.seconds = -62135596800
    c = pod.spec.containers.add()
    c.name = "c"
    c.image = ""  # omitempty, non-pointer: dropped when zero
    c.stdin = False  # likewise
    c.resources.SetInParent()  # a present empty struct stays {}
    raw = codec.wrap("v1", "Pod", pod.SerializeToString())
    obj = codec.decode(raw)
    assert obj["metadata"] == {"name": "p", "creationTimestamp": None}
    assert obj["spec"]["containers"] == [{"name": "c", "resources": {}}]


def test_times_and_int_or_string() -> None:
    obj = {
        "metadata": {
            "name": "x",
            "creationTimestamp": "2024-02-29T23:59:59+01:00",
            "managedFields": [{"manager": "m", "time": "2024-01-01T00:00:00Z"}],
        },
        "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]},
    }
    back = codec.decode(codec.encode(obj, "v1", "Service"))
    # Offsets are normalised to UTC, as Go's metav1.Time marshals.
    assert back["metadata"]["creationTimestamp"] == "2024-02-29T22:59:59Z"
    assert [p["targetPort"] for p in back["spec"]["ports"]] == ["http", 8081]


def test_lenient_encoding_drops_misfits_strict_names_them() -> None:
    obj = {"metadata": {"name": "d"}, "spec": {"replicas": "three", "paused": True}}
    back = codec.decode(codec.encode(obj, "apps/v1", "Deployment"))
    assert back["spec"] == {"paused": True}
    with pytest.raises(codec.CodecError, match=r"spec\.replicas"):
        codec.encode(obj, "apps/v1", "Deployment", lenient=False)


@pytest.mark.parametrize(
    "body",
    [b"", b"{}", b"k8s\x00", b"k8s\x00\x0a\x03", b"k8s\x00" + b"\xff" * 8],
)
def test_garbage_never_crashes(body: bytes) -> None:
    with pytest.raises(codec.CodecError):
        codec.decode(body)
