"""Every way of writing an object meets the same checks: RBAC's escalation check on what a
patch or an apply would store, the second verb an apply that creates needs, what a named GET
with ?watch is, and bodies nested too deeply or holding numbers too large (400/422, never a
500)."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.kubepb import codec
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.rbac import RBAC, bind, ok, role, rule, sa_subject, service_account, token

ROLES = f"/apis/{RBAC}/namespaces/default/roles"
BINDINGS = f"/apis/{RBAC}/namespaces/default/rolebindings"
CMS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def account(client: EmuClient, emu: Emulator, rules: list[dict[str, Any]]) -> EmuClient:
    """A ServiceAccount ``bob`` holding ``rules`` in default, and a client with its token."""
    await service_account(client, "bob")
    await role(client, "bob", rules)
    await bind(client, "bob", "Role", "bob", [sa_subject("bob")])
    return EmuClient(emu.url, await token(client, "bob"))


async def test_patch_and_apply_cannot_escalate(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    rbac_editor = [
        rule(["get", "list", "create", "update", "patch"], ["roles", "rolebindings"], [RBAC[:-3]])
    ]
    bob = await account(client, emu, rbac_editor)
    own = {"rules": [rule(["*"], ["*"], ["*"])]}
    r = await bob.request("PATCH", f"{ROLES}/bob", own, content_type=MERGE)
    assert r.status == 403, r.body
    assert "attempting to grant RBAC permissions not currently held" in r.json()["message"]
    applied = (
        f"apiVersion: {RBAC}\nkind: Role\nmetadata:\n  name: all\n"
        "rules:\n- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n"
    )
    r = await bob.request(
        "PATCH", f"{ROLES}/all?fieldManager=bob", applied.encode(), content_type=APPLY
    )
    assert r.status == 403, r.body
    # Pointing his binding at a stronger role is refused too (he lacks `bind` on it).
    r = await bob.request(
        "PATCH",
        f"{BINDINGS}/bob",
        {"roleRef": {"apiGroup": RBAC[:-3], "kind": "ClusterRole", "name": "cluster-admin"}},
        content_type=MERGE,
    )
    assert r.status in (403, 422), r.body
    assert (await bob.get("/api/v1/namespaces/default/secrets")).status == 403
    # What he holds he may still grant.
    narrower = {"rules": [rule(["get"], ["roles"], [RBAC[:-3]])]}
    r = await bob.request("PATCH", f"{ROLES}/bob", narrower, content_type=MERGE)
    assert r.status == 200, r.body


async def test_apply_that_creates_needs_create(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    bob = await account(client, emu, [rule(["get", "patch"], ["configmaps"])])
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  a: '1'\n"
    r = await bob.request("PATCH", f"{CMS}/fresh?fieldManager=bob", body, content_type=APPLY)
    assert r.status == 403, r.body
    assert 'cannot create resource "configmaps"' in r.json()["message"]
    # The same value as the applied one: shared ownership, no conflict with the creator.
    await ok(client.request("POST", CMS, {"metadata": {"name": "fresh"}, "data": {"a": "1"}}))
    r = await bob.request("PATCH", f"{CMS}/fresh?fieldManager=bob", body, content_type=APPLY)
    assert r.status == 200, r.body  # updating what exists needs only patch


async def test_a_named_get_with_watch_is_a_get(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await ok(client.request("POST", CMS, {"metadata": {"name": "one"}}))
    bob = await account(client, emu, [rule(["get"], ["configmaps"])])
    r = await bob.get(f"{CMS}/one?watch=true")
    assert r.status == 200 and r.json()["metadata"]["name"] == "one"
    r = await bob.get(f"{CMS}?watch=true")
    assert r.status == 403  # a watch needs the watch verb


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


async def test_deeply_nested_and_huge_bodies_are_refused_not_crashed(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    deep = b'{"metadata":{"name":"deep"},"data":' + nested(3000) + b"}"
    r = await client.request("POST", CMS, deep)
    assert r.status == 400, r.body  # data must be a map of strings, however deep
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "n": {"type": "integer", "multipleOf": 7},
                                        "free": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    await ok(client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd))
    blobs = "/apis/example.com/v1/namespaces/default/blobs"
    head = b'{"apiVersion":"example.com/v1","kind":"Blob","metadata":{"name":"b"},"spec":'
    # Deep but within reach of the recursion limit in force (a library may have raised it):
    # stored, or refused as too deep, never a 500.
    r = await client.request("POST", blobs, head + b'{"free":' + nested(900) + b"}}")
    assert r.status in (201, 400), r.body
    if r.status == 400:
        assert "nested too deeply" in r.json()["message"]
    head = head.replace(b'"name":"b"', b'"name":"huge"')
    r = await client.request("POST", blobs, head + b'{"n":' + str(10**400).encode() + b"}}")
    assert r.status == 422, r.body
    assert "should be a multiple of 7" in r.json()["message"]


async def test_protobuf_bodies_without_type_meta_decode_as_the_endpoint_takes_them(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A DeleteOptions body with empty type meta is DeleteOptions (not the resource's kind),
    also on a custom resource, whose objects have no protobuf form."""
    await ok(client.request("POST", CMS, {"metadata": {"name": "gone"}}))
    current = (await client.get(f"{CMS}/gone")).json()
    options = {"preconditions": {"uid": "not-" + current["metadata"]["uid"]}}
    raw = codec.encode(options, "meta.k8s.io/v1", "DeleteOptions")
    _, _, message = codec.unwrap(raw)
    bare = codec.wrap("", "", message)
    pb = "application/vnd.kubernetes.protobuf"
    r = await client.request("DELETE", f"{CMS}/gone", bare, content_type=pb)
    assert r.status == 409, r.body  # the precondition was read: not decoded as a ConfigMap
