"""The storage controllers with two clusters: they act on the target cluster's Nodes (where the
storage system runs), never on the control cluster's, and record their Events beside them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.clusters import TARGET
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.sim import serve_world
from kubetrio.sim.storage import serve_storage_sim
from tests.helpers.storage import (
    IMMEDIATE,
    add_ready_node,
    event_recorded,
    events_for,
    manager_config,
    node,
    registered,
    sample,
)


@pytest.fixture
async def target() -> AsyncIterator[Emulator]:
    async with serve_world() as e:
        yield e


async def test_node_deletion_and_gc_follow_the_target_clusters_nodes(
    emu: Emulator, target: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    control = emu
    async with serve_storage_sim(target, **IMMEDIATE) as storage:
        add_ready_node(target, "w1")
        add_ready_node(target, "w2")
        await registered(storage, "w1", "w2")
        # A Node named like an orphaned storage node, but in the control cluster: the GC must
        # not take it for the storage node's Kubernetes Node.
        control.create(node("orphan"))
        storage.add_node("orphan", offline=True, lock_expired=True)

        manager = Manager(
            Client.from_url(control.url, token=control.token),
            metrics_bind_address="0",
            health_probe_bind_address="0",
        )
        manager.add_cluster(TARGET, Client.from_url(target.url, token=target.token))
        config = manager_config(storage.url, gc_delay=30, gc_interval=3600)
        registry = ControllerRegistry(BUILTIN_CONTROLLERS)
        for name in ("nodedelete", "storagegc"):
            registry.setup(name)(manager, config)
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            target.delete("v1", "Node", "w1")
            await storage.wait_for(lambda: storage.node("w1") is None)
            await event_recorded(target, "w1", "StorageNodeDeleted")
            assert events_for(control, "w1") == []

            with trio.fail_after(60):  # the first GC pass, 30 s after the start
                await storage.wait_for(lambda: storage.node("orphan") is None)
            await trio.sleep(1)  # the pass finishes its bookkeeping before the clock moves
            assert sorted(storage.nodes) == ["w2"]
            assert sample(manager, "kubetrio_storage_gc_deleted_total") == 1
            manager.stop()
    assert control.counters.get("list", "nodes") == 0
    assert control.counters.get("watch", "nodes") == 0
