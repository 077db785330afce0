"""Keys repeated in a PATCH body, built-in kinds and custom resources alike: kube-apiserver's
strict decoding reports them (400 under Strict, a Warning under Warn) whatever the patched
object looks like afterwards. The emulator decides this from the patch body before patching
(its fast path counts the body's keys against the decoded patch); these pin the answers,
including a clean body whose string values look like keys (the fast path must fall back).
"""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.emulator.testclient import EmuClient
from tests.helpers.crds import CRD

CMS = "/api/v1/namespaces/default/configmaps"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"
MERGE = "application/merge-patch+json"


async def _configmap(client: EmuClient) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}
    assert (await client.request("POST", CMS, cm)).status == 201


async def test_repeated_key_in_a_patch_of_a_builtin(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await _configmap(client)
    body = b'{"data":{"b":"2","b":"3"}}'
    strict = await client.request("PATCH", f"{CMS}/cm?fieldValidation=Strict", body, None, MERGE)
    assert strict.status == 400
    assert strict.json()["message"] == 'strict decoding error: duplicate field "data.b"'
    warned = await client.request("PATCH", f"{CMS}/cm", body, None, MERGE)
    assert warned.status == 200
    assert warned.headers["warning"] == '299 - "duplicate field \\"data.b\\""'
    assert warned.json()["data"] == {"a": "1", "b": "3"}  # the last one wins, as in Go
    ignored = await client.request("PATCH", f"{CMS}/cm?fieldValidation=Ignore", body, None, MERGE)
    assert ignored.status == 200
    assert "warning" not in ignored.headers


async def test_clean_patch_whose_values_look_like_keys(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await _configmap(client)
    body = b'{"data":{"b":"x\\": \\"y","c":"\\":"}}'
    reply = await client.request("PATCH", f"{CMS}/cm?fieldValidation=Strict", body, None, MERGE)
    assert reply.status == 200
    assert "warning" not in reply.headers
    assert reply.json()["data"] == {"a": "1", "b": 'x": "y', "c": '":'}


async def test_repeated_key_in_a_patch_of_a_custom_resource(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await client.request("POST", crds, CRD)).status == 201
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert (await client.request("POST", GADGETS, {**gadget, "spec": {}})).status == 201
    body = b'{"spec":{"colour":"red","colour":"blue"}}'
    strict = await client.request("PATCH", f"{GADGETS}/g?fieldValidation=Strict", body, None, MERGE)
    assert strict.status == 400
    assert strict.json()["message"] == 'strict decoding error: duplicate field "spec.colour"'
    warned = await client.request("PATCH", f"{GADGETS}/g", body, None, MERGE)
    assert warned.status == 200
    assert warned.headers["warning"] == '299 - "duplicate field \\"spec.colour\\""'
    assert warned.json()["spec"] == {"colour": "blue"}
    clean = await client.request(
        "PATCH", f"{GADGETS}/g?fieldValidation=Strict", b'{"spec":{"colour":"g\\":"}}', None, MERGE
    )
    assert clean.status == 200
    assert "warning" not in clean.headers
