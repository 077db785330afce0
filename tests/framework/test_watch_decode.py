"""Watch lines: objects that fit are decoded in one pass; every other line as before."""

from __future__ import annotations

import msgspec
import pytest

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.client.typed import decode_watch_line

DECODER = msgspec.json.Decoder(ConfigMap)


def line(type_: str, obj: dict[str, object]) -> bytes:
    return msgspec.json.encode({"type": type_, "object": obj})


def config_map(rv: str, data: object) -> dict[str, object]:
    meta = {"name": "cm", "namespace": "ns", "resourceVersion": rv}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


@pytest.mark.parametrize("type_", ["ADDED", "MODIFIED", "DELETED"])
def test_an_object_that_fits_is_typed(type_: str) -> None:
    event = decode_watch_line(line(type_, config_map("7", {"k": "v"})), DECODER)
    assert (event.type, event.resource_version, event.undecodable) == (type_, "7", None)
    assert isinstance(event.obj, ConfigMap) and event.obj.data == {"k": "v"}


def test_a_bookmark_moves_only_the_resource_version() -> None:
    # A bookmark's object has the kind's apiVersion/kind and would decode as one: it must not.
    bookmark = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"resourceVersion": "9"}}
    event = decode_watch_line(line("BOOKMARK", bookmark), DECODER)
    assert (event.type, event.obj, event.resource_version) == ("BOOKMARK", None, "9")


def test_an_error_line_carries_the_status() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "code": 410, "reason": "Expired"}
    event = decode_watch_line(line("ERROR", status), DECODER)
    assert event.type == "ERROR" and event.obj is None
    assert event.error is not None and event.error.status == 410


def test_a_poison_object_is_reported_not_raised() -> None:
    event = decode_watch_line(line("MODIFIED", config_map("8", {"k": 1})), DECODER)
    assert event.obj is None and event.undecodable is not None
    assert (event.type, event.resource_version) == ("MODIFIED", "8")
    assert "data" in str(event.undecodable.error)


def test_a_broken_line_still_raises() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_watch_line(b'{"type": "ADDED", "object": {', DECODER)
