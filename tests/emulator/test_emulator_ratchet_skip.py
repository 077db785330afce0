"""Validation ratcheting on update, where the emulator skips walking subtrees equal to the
stored object's: the answers must be those of a full walk. A value unchanged from the stored
object is forgiven (kube's ratcheting), a changed one is not, and a required field missing
from an unchanged subtree is still reported (its value is absent, never "unchanged")."""

from __future__ import annotations

import copy
from typing import Any

import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.crd_schema import CRDS, MERGE, SCHEMA, WIDGETS, causes, post, widget, with_crd


async def _tighten(raw: EmuClient, schema: dict[str, Any]) -> None:
    current = (await raw.get(CRDS + "/widgets.example.com")).json()
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
    assert (await raw.request("PUT", CRDS + "/widgets.example.com", current)).status == 200


async def test_unchanged_invalid_values_deep_in_lists_are_forgiven(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    loose = copy.deepcopy(SCHEMA)
    ports = loose["properties"]["spec"]["properties"]["ports"]["items"]["properties"]
    ports["port"] = {"type": "integer"}
    loose["properties"]["spec"]["properties"]["code"].pop("pattern")
    await with_crd(emu, loose)
    stored = widget(code="ab1", ports=[{"name": "a", "port": -1}])
    assert (await post(emu, WIDGETS, stored)).status_code == 201
    tight = copy.deepcopy(SCHEMA)
    tight["properties"]["spec"]["properties"]["ports"]["items"]["properties"]["port"] = {
        "type": "integer",
        "minimum": 0,
    }
    raw = EmuClient(emu.url, emu.token)
    await _tighten(raw, tight)
    status = {"status": {"phase": "Ready"}}
    ok = await raw.request("PATCH", WIDGETS + "/w1/status", status, content_type=MERGE)
    assert ok.status == 200, ok.body
    ok = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"tier": "gold"}}, content_type=MERGE)
    assert ok.status == 200, ok.body
    changed = {"spec": {"ports": [{"name": "a", "port": -2}]}}
    bad = await raw.request("PATCH", WIDGETS + "/w1", changed, content_type=MERGE)
    assert bad.status == 422
    assert causes(bad.json()) == [
        (
            "FieldValueInvalid",
            "spec.ports[0].port",
            "Invalid value: -2: spec.ports[0].port in body should be greater than or equal to 0",
        )
    ]
    bad = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"code": "cd2"}}, content_type=MERGE)
    assert bad.status == 422
    assert [c[1] for c in causes(bad.json())] == ["spec.code"]


async def test_required_field_missing_from_an_unchanged_subtree_is_reported(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    loose = copy.deepcopy(SCHEMA)
    loose["properties"]["spec"]["properties"]["ports"]["items"].pop("required")
    await with_crd(emu, loose)
    assert (await post(emu, WIDGETS, widget(ports=[{"port": 80}]))).status_code == 201
    raw = EmuClient(emu.url, emu.token)
    await _tighten(raw, SCHEMA)
    status = {"status": {"phase": "Ready"}}
    bad = await raw.request("PATCH", WIDGETS + "/w1/status", status, content_type=MERGE)
    assert bad.status == 422
    assert causes(bad.json()) == [("FieldValueRequired", "spec.ports[0].name", "Required value")]
