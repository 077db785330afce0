"""The simulated storage service over HTTP, through the storage client: registration and the
node-id annotation, the offline / lock / master-volume rules on the emulator's (mock) clock,
failover, scripted failures and the admin API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.controllers.storage import (
    BackendError,
    BackendUnavailable,
    HttpStorageBackend,
    NodeInUse,
    NodeLocked,
    NodeNotFound,
    StorageError,
)
from kubetrio.controllers.storage.fenced import fence_backend
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.leaderelection.fence import Fence, NotLeader
from kubetrio.sim.storage import (
    NODE_ID_ANNOTATION,
    FaultRule,
    SimulatedStorage,
    serve_storage_sim,
)
from tests.helpers.storage import DRIVER, add_ready_node, node, registered, set_ready

# -- helpers shared by the storage e2e tests


def annotation(emu: Emulator, name: str) -> Any:
    obj = emu.get("v1", "Node", name)
    assert obj is not None
    raw = (obj["metadata"].get("annotations") or {}).get(NODE_ID_ANNOTATION)
    return None if raw is None else json.loads(raw)


@asynccontextmanager
async def storage_for(emu: Emulator, **options: Any) -> AsyncIterator[SimulatedStorage]:
    async with serve_storage_sim(emu, **options) as storage:
        yield storage


# -- tests


async def test_ready_nodes_are_registered_and_annotated(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("pending"))
    add_ready_node(emu, "w1", {NODE_ID_ANNOTATION: json.dumps({"other.csi.io": "x"})})
    async with storage_for(emu) as storage:
        add_ready_node(emu, "w2")
        await registered(storage, "w1", "w2")
        backend = HttpStorageBackend(storage.url)
        nodes = {n.name: n for n in await backend.list_nodes()}
        assert set(nodes) == {"w1", "w2"}  # "pending" is not Ready: no storage there yet
        assert all(n.health == "online" for n in nodes.values())
        # The registrar's annotation: this driver's id merged in, other drivers kept.
        await storage.wait_for(lambda: annotation(emu, "w2") is not None)
        assert annotation(emu, "w1") == {"other.csi.io": "x", DRIVER: nodes["w1"].id}
        assert annotation(emu, "w2") == {DRIVER: nodes["w2"].id}
        assert nodes["w1"].id != nodes["w2"].id

        set_ready(emu, "pending")
        await registered(storage, "pending")


async def test_offline_then_lock_then_master_volume_then_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with storage_for(emu, seed=7) as storage:
        add_ready_node(emu, "w1")
        add_ready_node(emu, "w2")
        await registered(storage, "w1", "w2")
        storage.add_volume("solo", master="w1")  # no replicas: pins w1
        replicated = storage.add_volume("db", master="w1", replicas=["w2"])
        backend = HttpStorageBackend(storage.url)

        with pytest.raises(NodeInUse, match="node still in use: node w1 is online"):
            await backend.delete_node("w1")
        gone_at = trio.current_time()
        emu.delete("v1", "Node", "w1")
        sim_node = storage.node("w1")
        await storage.wait_for(lambda: sim_node is not None and sim_node.offline_at is not None)
        assert sim_node is not None and sim_node.offline_at is not None
        offline_in = sim_node.offline_at - gone_at
        assert 20 <= offline_in <= 30
        assert sim_node.lock_expires_at == pytest.approx(sim_node.offline_at + 30)

        await trio.sleep_until(sim_node.offline_at - 0.5)
        with pytest.raises(NodeInUse):
            await backend.delete_node("w1")
        await trio.sleep_until(sim_node.offline_at)
        health = {n.name: n.health for n in await backend.list_nodes()}
        assert health == {"w1": "offline", "w2": "online"}
        with pytest.raises(NodeLocked, match="storage node w1: node lock has not yet expired"):
            await backend.delete_node("w1")
        # The replicated volume failed over to its replica once its master went offline.
        assert (replicated.master, replicated.replicas) == ("w2", [])

        await trio.sleep_until(sim_node.lock_expires_at)
        with pytest.raises(NodeInUse, match="master of default/solo without replicas") as info:
            await backend.delete_node("w1")
        assert info.value.reason.startswith("node still in use")

        reply = await EmuClient(storage.url).get("/v1/volumes")
        solo = next(v for v in reply.json()["items"] if v["name"] == "solo")
        assert (
            await EmuClient(storage.url).request("DELETE", f"/v1/volumes/{solo['id']}")
        ).status == 200
        await backend.delete_node("w1")
        assert storage.node("w1") is None
        with pytest.raises(NodeNotFound):
            await backend.delete_node("w1")
        assert [r.status for r in storage.records("delete", "w1")] == [409, 409, 423, 409, 200]


async def test_a_node_that_comes_back_goes_online_again(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with storage_for(emu, offline_after=(20, 20), lock_seconds=30) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        first_id = storage.nodes["w1"].id
        set_ready(emu, "w1", "Unknown")  # its kubelet (and storage) went away
        sim_node = storage.nodes["w1"]
        await storage.wait_for(lambda: sim_node.offline_at is not None)
        await trio.sleep(25)
        assert sim_node.health(trio.current_time()) == "offline"
        set_ready(emu, "w1")
        await storage.wait_for(lambda: sim_node.offline_at is None)
        assert storage.nodes["w1"].id == first_id


async def test_scripted_failures_and_hangs(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with storage_for(emu) as storage:
        storage.add_node("gone", offline=True, lock_expired=True)
        backend = HttpStorageBackend(storage.url, timeout=20)
        admin = EmuClient(storage.url)
        reply = await admin.request("POST", "/v1/faults", {"op": "list", "count": 2, "status": 503})
        assert reply.status == 201 and reply.json() == {"pending": 2}
        for _ in range(2):
            with pytest.raises(BackendError, match=r"GET .*/v1/nodes answered 503"):
                await backend.list_nodes()
        assert [n.name for n in await backend.list_nodes()] == ["gone"]

        storage.faults.add(FaultRule(op="delete", hang_seconds=60))
        started = trio.current_time()
        with pytest.raises(BackendUnavailable, match="no answer within 20s"):
            await backend.delete_node("gone")
        assert trio.current_time() - started == pytest.approx(20, abs=0.5)
        await backend.delete_node("gone")  # the rule was used up

        storage.faults.add(FaultRule(op="any", count=5))
        assert (await admin.request("DELETE", "/v1/faults")).status == 200
        assert await backend.list_nodes() == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("POST", "/v1/faults", {"op": "get"}, 400, "op: one of list, delete, any"),
        ("POST", "/v1/faults", {"count": 0}, 400, "count: must be at least 1"),
        ("POST", "/v1/faults", {"status": "x"}, 400, "status: must be an integer"),
        ("POST", "/v1/faults", [1], 400, "must be a JSON object"),
        ("POST", "/v1/volumes", {"name": "v", "master": "nope"}, 400, "master: no"),
        ("POST", "/v1/volumes", {"name": "v"}, 400, "master: must be a non-empty"),
        ("POST", "/v1/nodes", {"name": "x", "offline": "yes"}, 400, "offline: must be"),
        ("POST", "/v1/nodes", {"name": "dup"}, 409, "storage node dup already exists"),
        ("DELETE", "/v1/volumes/vol-9", None, 404, "volume vol-9 not found"),
        ("DELETE", "/v1/nodes/nope", None, 404, "node nope not found"),
        ("GET", "/v2/nodes", None, 404, "no storage endpoint"),
        ("PUT", "/v1/nodes", None, 404, "no storage endpoint"),
    ],
)
async def test_bad_requests_name_the_problem(
    emu: Emulator, method: str, path: str, body: Any, status: int, message: str
) -> None:
    async with storage_for(emu) as storage:
        storage.add_node("dup")
        reply = await EmuClient(storage.url).request(method, path, body)
        assert reply.status == status
        assert message in reply.json()["error"]


async def test_admin_api_adds_nodes_and_volumes(emu: Emulator) -> None:
    async with storage_for(emu) as storage:
        admin = EmuClient(storage.url)
        reply = await admin.request(
            "POST", "/v1/nodes", {"name": "a", "offline": True, "lockExpired": True}
        )
        assert reply.status == 201 and reply.json()["health"] == "offline"
        await admin.request("POST", "/v1/nodes", {"name": "b"})
        reply = await admin.request(
            "POST", "/v1/volumes", {"name": "v", "master": "b", "replicas": ["a"]}
        )
        assert reply.status == 201
        assert reply.json() == {
            "id": "vol-00001",
            "namespace": "default",
            "name": "v",
            "master": "b",
            "replicas": ["a"],
        }
        # Deleting a replica holder drops it from the volume.
        await HttpStorageBackend(storage.url).delete_node("a")
        assert storage.volumes["vol-00001"].replicas == []
        assert isinstance(NodeInUse("b"), StorageError)


async def test_a_fenced_http_backend_asks_the_fence_right_before_the_delete_leaves(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The backend lists (to learn the node's id) before it deletes, which can outlast the
    renew deadline: a lease that lapses during the list must stop the DELETE."""
    async with storage_for(emu) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        url = storage.url
        lists_before = len(storage.records("list"))

        def held_until_listed() -> bool:
            return len(storage.records("list")) == lists_before

        backend = fence_backend(HttpStorageBackend(url), Fence(held_until_listed))
        with pytest.raises(NotLeader, match="delete storage node w1"):
            await backend.delete_node("w1")
        assert len(storage.records("list")) == lists_before + 1
        assert storage.records("delete") == []
        # The same call under a lease that holds sends the DELETE (w1 is online: 409).
        held = fence_backend(HttpStorageBackend(url), Fence(lambda: True))
        with pytest.raises(NodeInUse):
            await held.delete_node("w1")
        assert len(storage.records("delete")) == 1
