"""The node-delete controller in a manager against the emulator and the simulated storage
service (on an address of its own, never the API server's), on the mock clock: which deletions
reach the backend, retries, the StorageOS timeline."""

from __future__ import annotations

import itertools
import json
import logging

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.faults import FaultRule as ApiFault
from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim.storage import (
    NODE_ID_ANNOTATION,
    FaultRule,
    serve_storage_sim,
)
from tests.helpers.storage import (
    DRIVER,
    IMMEDIATE,
    add_ready_node,
    deletes,
    emu_annotated,
    event_recorded,
    events_for,
    manager_config,
    node,
    registered,
    running_manager,
)

# "As soon as the backend allows it, not much later": the retry delay's cap, spelled out here so
# that a change to the cap has to change this promise too.
SOON = 10.0


def storage_annotation(node_id: str = "some-id") -> dict[str, str]:
    return {NODE_ID_ANNOTATION: json.dumps({DRIVER: node_id})}


async def test_deleted_storage_node_is_removed_from_the_backend(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        # The backend URL is the service's own address; the API server's serves no storage.
        assert storage.url.startswith("http://127.0.0.1:") and storage.url.endswith("/v1")
        assert not storage.url.startswith(emu.url)
        api = EmuClient(emu.url, emu.token)
        for path in ("/_storage/v1/nodes", "/v1/nodes"):
            assert (await api.get(path)).status == 404, path
        add_ready_node(emu, "w1")
        add_ready_node(emu, "w2")
        await registered(storage, "w1", "w2")
        await storage.wait_for(lambda: emu_annotated(emu, "w1"))
        async with running_manager(emu, manager_config(storage.url)) as manager:
            emu.delete("v1", "Node", "w1")
            gone_at = trio.current_time()
            await storage.wait_for(lambda: storage.node("w1") is None)
            assert trio.current_time() - gone_at < 1
            await event_recorded(emu, "w1", "StorageNodeDeleted")
            assert storage.node("w2") is not None
            assert deletes(manager, "deleted") == 1
            assert deletes(manager, "error") == 0
            assert [r.status for r in storage.records("delete")] == [200]
            await event_recorded(emu, "w1", "StorageNodeDeleted")
            assert events_for(emu, "w1") == [
                ("Normal", "StorageNodeDeleted", "storage node deleted")
            ]


async def test_not_found_in_the_backend_is_one_call_and_done(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        # Annotated, but the backend never heard of it (not Ready: never registered).
        emu.create(node("ghost", storage_annotation()))
        async with running_manager(emu, manager_config(storage.url)) as manager:
            emu.delete("v1", "Node", "ghost")
            await storage.wait_for(lambda: len(storage.records()) == 1)
            await trio.sleep(200)  # retries are at most 10 s apart: any would have happened
            assert [(r.op, r.status) for r in storage.records()] == [("list", 200)]
            assert deletes(manager, "not_found") == 1
            assert sum(deletes(manager, r) for r in ("deleted", "in_use", "locked", "error")) == 0


async def test_only_nodes_annotated_for_the_driver_are_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kubetrio.nodedelete")
    kept = {
        "plain": None,
        "bad-json": "{not json",
        "not-object": "[1, 2]",
        "other-driver": json.dumps({"other.csi.example.com": "x"}),
    }
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        for name, value in kept.items():
            emu.create(node(name, {NODE_ID_ANNOTATION: value} if value is not None else None))
            storage.add_node(name, offline=True, lock_expired=True)  # deletable at once
        emu.create(node("mine", storage_annotation()))
        storage.add_node("mine", offline=True, lock_expired=True)
        async with running_manager(emu, manager_config(storage.url)) as manager:
            for name in kept:
                emu.delete("v1", "Node", name)
            emu.delete("v1", "Node", "mine")  # delivered after the others, in order
            await event_recorded(emu, "mine", "StorageNodeDeleted")
            await trio.sleep(100)
            assert sorted(storage.nodes) == sorted(kept)
            assert {r.node for r in storage.records("delete")} == {"mine"}
            assert deletes(manager, "deleted") == 1
    warned = {
        r.msg["node"]
        for r in caplog.records
        if isinstance(r.msg, dict) and "malformed" in r.msg.get("event", "")
    }
    assert warned == {"bad-json", "not-object"}


async def test_backend_errors_are_retried_with_growing_delays(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        await storage.wait_for(lambda: emu_annotated(emu, "w1"))
        storage.faults.add(FaultRule(op="any", count=6, status=500, message="disk on fire"))
        async with running_manager(emu, manager_config(storage.url)) as manager:
            emu.delete("v1", "Node", "w1")
            await event_recorded(emu, "w1", "StorageNodeDeleted")
            lists = storage.records("list")
            assert [r.status for r in lists] == [500] * 6 + [200]
            gaps = [b.at - a.at for a, b in itertools.pairwise(lists)]
            assert gaps == pytest.approx([0.005 * 2**i for i in range(6)], abs=1e-3)
            assert deletes(manager, "error") == 6
            assert deletes(manager, "deleted") == 1
            errors = manager.registry.get_sample_value(
                "kubetrio_storage_backend_request_errors_total", {"op": "list"}
            )
            assert errors == 6
            events = events_for(emu, "w1")
            # One Warning for the run of identical failures, then the success.
            assert [(t, r) for t, r, _ in events] == [
                ("Warning", "StorageNodeDeleteFailed"),
                ("Normal", "StorageNodeDeleted"),
            ]
            assert "answered 500: disk on fire" in events[0][2]


@pytest.mark.slow
async def test_deletion_follows_the_backend_timeline_closely(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Online (409) → offline but locked (423) → lock expired but master of a volume without
    replicas (409) → volume deleted → deleted within SOON; a second node without a volume is
    deleted within SOON of its lock expiring."""
    async with serve_storage_sim(emu, seed=3) as storage:
        for name in ("pinned", "free", "stays"):
            add_ready_node(emu, name)
        await registered(storage, "pinned", "free", "stays")
        await storage.wait_for(lambda: all(emu_annotated(emu, n) for n in storage.nodes))
        storage.add_volume("solo", master="pinned")
        async with running_manager(emu, manager_config(storage.url)) as manager:
            emu.delete("v1", "Node", "pinned")
            emu.delete("v1", "Node", "free")
            pinned, free = storage.nodes["pinned"], storage.nodes["free"]
            await event_recorded(emu, "free", "StorageNodeDeleted")
            assert free.lock_expires_at is not None and free.offline_at is not None
            freed = storage.records("delete", "free")[-1]
            assert freed.status == 200
            assert free.lock_expires_at <= freed.at <= free.lock_expires_at + SOON

            assert pinned.lock_expires_at is not None and pinned.offline_at is not None
            await trio.sleep_until(pinned.lock_expires_at + 120)  # long blocked by its volume
            assert storage.node("pinned") is not None
            volume_gone_at = trio.current_time()
            storage.delete_volume(next(iter(storage.volumes)))
            await event_recorded(emu, "pinned", "StorageNodeDeleted")
            attempts = storage.records("delete", "pinned")
            done = attempts[-1]
            assert done.status == 200
            assert volume_gone_at <= done.at <= volume_gone_at + SOON
            # Every refusal was the right one for its moment.
            for attempt in attempts[:-1]:
                if attempt.at < pinned.offline_at:
                    assert attempt.status == 409 and "is online" in attempt.reason
                elif attempt.at < pinned.lock_expires_at:
                    assert attempt.status == 423
                else:
                    assert attempt.status == 409 and "default/solo" in attempt.reason
            assert {a.status for a in attempts[:-1]} == {409, 423}
            assert deletes(manager, "in_use") >= 2 and deletes(manager, "locked") >= 1
            assert storage.node("stays") is not None


async def test_a_delete_missed_by_the_watch_arrives_as_a_tombstone(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        await storage.wait_for(lambda: emu_annotated(emu, "w1"))
        # Node watches are refused: the informer lists, then is blind.
        blind = emu.faults.add(ApiFault(verb="watch", resource="nodes", status=503))
        async with running_manager(emu, manager_config(storage.url)):
            emu.delete("v1", "Node", "w1")
            emu.faults.expire_watch_history()
            emu.faults.remove(blind.id)
            await storage.wait_for(lambda: storage.node("w1") is None)
            assert [r.status for r in storage.records("delete")] == [200]
