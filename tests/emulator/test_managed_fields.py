"""Field ownership beyond what the conformance corpus compares with a cluster: the cap on
update managers (their oldest fold into "ancient-changes", as a cluster folds them), the
manager named by the User-Agent, and an object whose entries a client reset staying
untracked until an apply attributes what it holds to "before-first-apply"."""

from __future__ import annotations

from typing import Any

import trio.testing

from kubetrio.emulator.testclient import EmuClient

CMS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def _owners(client: EmuClient, name: str) -> dict[str, Any]:
    body = (await client.get(f"{CMS}/{name}")).json()
    return {e["manager"]: e["fieldsV1"] for e in body["metadata"].get("managedFields", [])}


async def _patch(client: EmuClient, path: str, body: Any, **kw: Any) -> None:
    r = await client.request("PATCH", path, body, content_type=MERGE, **kw)
    assert r.status == 200, r.body


async def test_update_managers_beyond_ten_fold_into_ancient_changes(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    # Entries of one second are ordered by name: two digits keep that the order of writing.
    r = await client.request(
        "POST", f"{CMS}?fieldManager=m00", {"metadata": {"name": "cap"}, "data": {"k0": "v"}}
    )
    assert r.status == 201, r.body
    for i in range(1, 12):
        await _patch(client, f"{CMS}/cap?fieldManager=m{i:02}", {"data": {f"k{i}": "v"}})
    owners = await _owners(client, "cap")
    assert sorted(owners) == ["ancient-changes", *(f"m{i:02}" for i in range(3, 12))]
    assert owners["ancient-changes"] == {"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}


async def test_the_user_agent_names_a_writer_without_a_field_manager(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    agent = {"User-Agent": "my-controller/v1.2.3 (linux/amd64) kubetrio"}
    r = await client.request(
        "POST", CMS, {"metadata": {"name": "ua"}, "data": {"a": "1"}}, headers=agent
    )
    assert r.status == 201, r.body
    assert await _owners(client, "ua") == {"my-controller": {"f:data": {".": {}, "f:a": {}}}}


async def test_a_reset_object_stays_untracked_until_applied(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.request(
        "POST", f"{CMS}?fieldManager=maker", {"metadata": {"name": "r"}, "data": {"a": "1"}}
    )
    assert r.status == 201, r.body
    await _patch(client, f"{CMS}/r", {"metadata": {"managedFields": []}})
    await _patch(client, f"{CMS}/r?fieldManager=editor", {"data": {"b": "2"}})
    assert await _owners(client, "r") == {}
    applied = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  c: '3'\n"
    r = await client.request("PATCH", f"{CMS}/r?fieldManager=ap", applied, content_type=APPLY)
    assert r.status == 200, r.body
    assert await _owners(client, "r") == {
        "ap": {"f:data": {"f:c": {}}},
        "before-first-apply": {"f:data": {".": {}, "f:a": {}, "f:b": {}}},
    }
