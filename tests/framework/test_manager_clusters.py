"""A manager with a second cluster (controller-runtime's ``cluster.Cluster`` added to a
manager): two emulators in one trio run, a controller of the primary cluster fed by a kind
watched in the other one, and sync and readiness said per cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.api.machine import Machine
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.cache.syncfailure import CacheSyncError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.builder import object_key
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import CacheSyncTimeout, Manager
from kubetrio.sim import serve_world
from tests.helpers.manager import config_map, http_get


@pytest.fixture
async def other() -> AsyncIterator[Emulator]:
    """A second emulator (the target cluster) in the test's run, on the same clock."""
    async with serve_world() as e:
        yield e


class Seen:
    """Records the keys it reconciles, with what each cluster's cache holds for them."""

    def __init__(self, manager: Manager) -> None:
        self.primary = manager.cache.informer(ConfigMap).lister
        self.target = manager.cluster("target").cache.informer(ConfigMap).lister
        self.keys: list[tuple[ObjectKey, bool, bool]] = []
        self.changed = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        here = self.primary.get(key.namespace, key.name) is not None
        there = self.target.get(key.namespace, key.name) is not None
        self.keys.append((key, here, there))
        self.changed.set()
        self.changed = trio.Event()
        return Result()

    async def wait_for(self, name: str) -> tuple[bool, bool]:
        while True:
            for key, here, there in self.keys:
                if key.name == name:
                    return here, there
            await self.changed.wait()


def two_cluster_manager(emu: Emulator, other: Emulator, **options: float) -> Manager:
    manager = Manager(
        Client.from_url(emu.url, token=emu.token),
        metrics_bind_address="0",
        health_probe_bind_address="127.0.0.1:0",
        **options,
    )
    manager.add_cluster("target", Client.from_url(other.url, token=other.token))
    return manager


async def test_a_kind_of_the_other_cluster_feeds_a_controller_of_the_primary_one(
    emu: Emulator, other: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    manager = two_cluster_manager(emu, other)
    target = manager.cluster("target")
    assert target is not manager.cluster("control")  # an unknown name is the primary one
    assert manager.cluster("control").cache is manager.cache
    seen = Seen(manager)
    manager.controller("seen").for_(ConfigMap).watches(
        ConfigMap, object_key, cluster=target
    ).complete(seen)
    emu.create(config_map("in-control"))
    other.create(config_map("in-target"))
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        assert await seen.wait_for("in-control") == (True, False)
        assert await seen.wait_for("in-target") == (False, True)
        other.create(config_map("later"))  # a watch event of the target cluster
        assert await seen.wait_for("later") == (False, True)
        manager.stop()
    assert other.counters.get("watch", "configmaps") >= 1


async def test_without_a_second_cluster_every_name_is_the_primary_cluster(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    manager = Manager(
        Client.from_url(emu.url, token=emu.token),
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    target = manager.cluster("target")
    assert (target.client, target.cache) == (manager.client, manager.cache)
    manager.add_cluster("x", manager.client)
    with pytest.raises(ValueError, match="already added"):
        manager.add_cluster("x", manager.client)
    # Too late: what asked for "target" above was wired to the primary cluster.
    with pytest.raises(ValueError, match="add clusters before setting up the controllers"):
        manager.add_cluster("target", manager.client)


async def test_readyz_names_the_cluster_whose_informers_have_not_synced(
    emu: Emulator, other: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    other.faults.add(FaultRule(resource="configmaps", latency=60, count=1))
    manager = two_cluster_manager(emu, other)
    seen = Seen(manager)
    manager.controller("seen").for_(ConfigMap).watches(
        ConfigMap, object_key, cluster=manager.cluster("target")
    ).complete(seen)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run)
        await manager.serving.wait()
        await trio.sleep(1)  # the primary cluster's list is answered at once
        not_ready = await http_get(manager, "/readyz?verbose")
        assert not_ready.status_code == 500
        assert "[+]informers ok" in not_ready.text
        assert (
            "[-]informers-target failed: informers have not synced yet (target cluster): "
            "configmaps" in not_ready.text
        ), not_ready.text
        other.create(config_map("x"))
        await seen.wait_for("x")
        assert (await http_get(manager, "/readyz")).status_code == 200
        manager.stop()


async def test_a_list_refused_in_the_target_cluster_fails_the_sync_naming_it(
    emu: Emulator, other: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """At once, even while the primary cluster is still listing (it is waited on alongside)."""
    emu.faults.add(FaultRule(resource="configmaps", latency=600))
    manager = two_cluster_manager(emu, other)
    manager.cache.informer(ConfigMap)
    manager.cluster("target").cache.informer(Machine, namespace="default")  # no CRD there
    started = trio.current_time()
    with pytest.raises(CacheSyncError) as caught:
        await manager.run()
    assert trio.current_time() - started < 1
    assert str(caught.value).startswith(
        "target cluster: CRD not installed: machines.machine.sapcloud.io (404 NotFound"
    )


async def test_a_sync_timeout_names_the_cluster_of_each_pending_informer(
    emu: Emulator, other: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    other.faults.add(FaultRule(resource="configmaps", status=503))
    manager = two_cluster_manager(emu, other, cache_sync_timeout=20)
    manager.cache.informer(ConfigMap)
    manager.cluster("target").cache.informer(ConfigMap)
    with pytest.raises(CacheSyncTimeout) as caught:
        await manager.run()
    assert str(caught.value) == "informers for configmaps (target cluster) did not sync within 20s"
