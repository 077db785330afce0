"""The storage GC in a manager against the emulator and the simulated storage service, on the
mock clock: deletions missed while the manager was down, the schedule, exactly the extra
nodes, and a backend that cannot be reached or does not answer."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from kubetrio.controllers.storagegc import ZERO_DELAY_SECONDS, StorageGC, add_storage_gc
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim.storage import FaultRule, serve_storage_sim
from tests.helpers.storage import (
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
    sample,
)

BOTH = ("nodedelete", "storagegc")


def gc_runs(manager: Manager) -> float:
    return sample(manager, "kubetrio_storage_gc_runs_total")


async def test_gc_removes_a_node_deleted_while_the_manager_was_down(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, seed=5) as storage:
        for name in ("w1", "w2", "w3"):
            add_ready_node(emu, name)
        await registered(storage, "w1", "w2", "w3")
        await storage.wait_for(lambda: all(emu_annotated(emu, n) for n in storage.nodes))
        emu.delete("v1", "Node", "w3")  # no manager is running
        w3 = storage.nodes["w3"]
        await storage.wait_for(lambda: w3.lock_expires_at is not None)
        assert w3.lock_expires_at is not None
        await trio.sleep_until(w3.lock_expires_at)  # the backend would allow it from now on

        config = manager_config(storage.url, gc_delay=30, gc_interval=600)
        started = trio.current_time()
        async with running_manager(emu, config, BOTH) as manager:
            await storage.wait_for(lambda: storage.node("w3") is None)
            assert trio.current_time() - started == pytest.approx(30, abs=1)
            await trio.sleep(1)  # the pass finishes its bookkeeping before the clock moves
            assert sorted(storage.nodes) == ["w1", "w2"]
            assert gc_runs(manager) == 1
            assert sample(manager, "kubetrio_storage_gc_deleted_total") == 1
            assert deletes(manager, "deleted") == 1
            assert events_for(emu, "w3") == []  # the node-delete controller never saw it

            # Then every interval, on the grid: the second pass 10 min after the first.
            await trio.sleep_until(started + 30 + 600 - 1)
            assert gc_runs(manager) == 1
            await trio.sleep_until(started + 30 + 600 + 1)
            assert gc_runs(manager) == 2
            # First pass: its list, then the delete's own id lookup; second: a list only.
            assert [r.at - started for r in storage.records("list")] == pytest.approx(
                [30, 30, 630], abs=1
            )


async def test_gc_deletes_exactly_the_nodes_without_a_kubernetes_node(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        # Two Kubernetes Nodes: w1 (a storage node) and w2 (not annotated, not Ready: the GC
        # compares names with every Node, so its deletable storage node is kept).
        emu.create(node("w2"))
        storage.add_node("w2", offline=True, lock_expired=True)
        storage.add_node("x1", offline=True, lock_expired=True)
        storage.add_node("x2", offline=True, lock_expired=True)
        assert len(storage.nodes) == 4
        config = manager_config(storage.url, gc_delay=30, gc_interval=3600)
        async with running_manager(emu, config, ("storagegc",)) as manager:
            await storage.wait_for(lambda: len(storage.records("list")) == 1)
            await trio.sleep(1)
            assert sorted(storage.nodes) == ["w1", "w2"]
            assert sorted(r.node for r in storage.records("delete")) == ["x1", "x2"]
            assert all(r.status == 200 for r in storage.records("delete"))
            assert sample(manager, "kubetrio_storage_gc_deleted_total") == 2
            assert sample(manager, "kubetrio_storage_gc_errors_total") == 0


async def test_gc_interval_zero_never_runs(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu) as storage:
        storage.add_node("orphan", offline=True, lock_expired=True)
        config = manager_config(storage.url, gc_delay=30, gc_interval=0)
        async with running_manager(emu, config, BOTH) as manager:
            await trio.sleep(600)  # well past the delay, when a first pass would have run
            assert storage.records() == []
            assert storage.node("orphan") is not None
            assert gc_runs(manager) == 0


async def test_gc_delay_zero_means_ten_seconds_and_refusals_are_counted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu) as storage:
        storage.add_node("locked", offline=True)  # lock still held: 423
        config = manager_config(storage.url, gc_delay=0, gc_interval=3600)
        started = trio.current_time()
        async with running_manager(emu, config, ("storagegc",)) as manager:
            await storage.wait_for(lambda: len(storage.records("delete")) == 3)
            attempts = storage.records("delete")
            # The pass, then retries of the refused node between passes (0.5 s, 1 s, ...).
            assert [r.at - started for r in attempts] == pytest.approx(
                [ZERO_DELAY_SECONDS, ZERO_DELAY_SECONDS + 0.5, ZERO_DELAY_SECONDS + 1.5], abs=0.3
            )
            assert {r.status for r in attempts} == {423}
            await trio.sleep(0.1)  # the third refusal's bookkeeping
            assert sample(manager, "kubetrio_storage_gc_errors_total") == 3
            assert deletes(manager, "locked") == 3
            assert storage.node("locked") is not None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.slow
async def test_unreachable_backend_is_counted_never_fatal(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    emu.create(node("w1", {"csi.volume.kubernetes.io/nodeid": '{"csi.storageos.com": "id-1"}'}))
    config = manager_config(url, gc_delay=5, gc_interval=20)
    async with running_manager(emu, config, BOTH) as manager:
        emu.delete("v1", "Node", "w1")
        await event_recorded(emu, "w1", "StorageNodeDeleteFailed")
        await trio.sleep(120)
        assert deletes(manager, "error") >= 10  # retried all along, capped delays
        assert sample(manager, "kubetrio_storage_gc_runs_total") >= 5
        assert sample(manager, "kubetrio_storage_gc_errors_total") == gc_runs(manager)
        assert sample(manager, "kubetrio_storage_backend_request_errors_total", op="list") >= 15
        assert sample(manager, "kubetrio_storage_backend_request_errors_total", op="delete") == 0
        [(kind, _, message)] = events_for(emu, "w1")
        assert kind == "Warning"
        assert message.startswith(f"storage backend: GET {url}/nodes: ")
        assert "\n" not in message
    # Leaving the block stopped the manager cleanly: nothing raised out of it.


async def test_a_backend_that_hangs_is_given_up_after_the_delete_timeout(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_storage_sim(emu, **IMMEDIATE) as storage:
        add_ready_node(emu, "w1")
        await registered(storage, "w1")
        await storage.wait_for(lambda: emu_annotated(emu, "w1"))
        storage.faults.add(FaultRule(op="delete", hang_seconds=600))
        async with running_manager(emu, manager_config(storage.url)) as manager:
            gone_at = trio.current_time()
            emu.delete("v1", "Node", "w1")
            await event_recorded(emu, "w1", "StorageNodeDeleted")
            done = storage.records("delete")[-1]
            assert done.status == 200
            assert done.at - gone_at == pytest.approx(20, abs=0.5)  # storage.deleteTimeout
            assert deletes(manager, "error") == 1
            [(_, _, message), _] = events_for(emu, "w1")
            assert "no answer within 20s" in message


def test_storage_gc_is_a_leader_only_runnable() -> None:
    assert StorageGC.needs_leader_election is True


async def test_gc_retries_a_refused_node_until_the_backend_allows_it(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The usual case for the GC: the Node went while the manager was down, and at the first
    pass the storage node is still locked. It must not wait an interval (1 h) for the next."""
    async with serve_storage_sim(emu, seed=5) as storage:
        for name in ("w1", "w2"):
            add_ready_node(emu, name)
        await registered(storage, "w1", "w2")
        emu.delete("v1", "Node", "w2")  # no manager is running
        config = manager_config(storage.url, gc_delay=30, gc_interval=3600)
        async with running_manager(emu, config, ("storagegc",)) as manager:
            await storage.wait_for(lambda: storage.node("w2") is None)
            assert storage.records("delete"), "the GC never tried"
            refusals = deletes(manager, "locked") + deletes(manager, "in_use")
            assert refusals >= 1  # the first pass was refused...
            assert trio.current_time() < 120  # ...and the node went within a minute or so
            assert sorted(storage.nodes) == ["w1"]


class BrokenBackend:
    """A plugin backend with a bug: the GC must survive it."""

    async def list_nodes(self) -> list[object]:
        raise RuntimeError("backend plugin bug")

    async def delete_node(self, name: str) -> None:
        raise AssertionError("not reached")


async def test_a_gc_pass_that_raises_anything_is_not_the_managers_end(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    manager = Manager(
        Client.from_kubeconfig(str(emu.kubeconfig_path)),
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    add_storage_gc(manager, BrokenBackend(), delay=1, interval=60)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await trio.sleep(130)  # three passes; a crash would have ended this nursery
        assert sample(manager, "kubetrio_storage_gc_errors_total") == 3
        manager.stop()
