"""Controllers in a manager against the emulator: the reconcile contract end to end."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.api.machine import Machine
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.syncfailure import CacheSyncError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result, TerminalError
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import CacheSyncTimeout, Manager
from tests.helpers.machines import install_crds, machine_doc
from tests.helpers.manager import config_map, http_get, scrape
from tests.helpers.rbac import bind, role, rule, sa_subject, service_account, token


class Recording:
    """A reconciler that records what it saw and can be told to fail or requeue."""

    def __init__(self, manager: Manager) -> None:
        self.lister = manager.cache.informer(ConfigMap).lister
        self.calls: list[tuple[ObjectKey, float, str | None]] = []
        self.running: Counter[ObjectKey] = Counter()
        self.max_parallel_per_key = 0
        self.max_parallel = 0
        self.fail_times: dict[ObjectKey, int] = {}
        self.terminal: set[ObjectKey] = set()
        self.requeue_after: dict[ObjectKey, float] = {}
        self.work_seconds = 0.0
        self._changed = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        self.running[key] += 1
        self.max_parallel_per_key = max(self.max_parallel_per_key, self.running[key])
        self.max_parallel = max(self.max_parallel, sum(self.running.values()))
        try:
            obj = self.lister.get(key.namespace, key.name)
            self.calls.append((key, trio.current_time(), obj.data.get("v") if obj else None))
            self._changed.set()
            self._changed = trio.Event()
            if self.work_seconds:
                await trio.sleep(self.work_seconds)
            if key in self.terminal:
                raise TerminalError("cannot be fixed by retrying")
            if self.fail_times.get(key, 0) > 0:
                self.fail_times[key] -= 1
                raise RuntimeError("transient failure")
            return Result(requeue_after=self.requeue_after.get(key))
        finally:
            self.running[key] -= 1

    def seen(self, name: str) -> list[str | None]:
        return [value for key, _, value in self.calls if key.name == name]

    async def wait_for(self, condition: object) -> None:
        assert callable(condition)
        while not condition():
            await self._changed.wait()


@asynccontextmanager
async def running_manager(
    emu: Emulator, workers: int = 1
) -> AsyncIterator[tuple[Manager, Recording]]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(
        client,
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        graceful_shutdown_timeout=30,
    )
    recording = Recording(manager)
    manager.controller("recording").for_(ConfigMap).workers(workers).complete(recording)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield manager, recording
        manager.stop()


async def test_reconciles_create_update_delete_and_requeue_after(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(config_map("existing", v="0"))
    async with running_manager(emu) as (_, rec):
        await rec.wait_for(lambda: rec.seen("existing") == ["0"])
        emu.create(config_map("a", v="1"))
        await rec.wait_for(lambda: rec.seen("a") == ["1"])
        current = emu.get("v1", "ConfigMap", "a", "default")
        assert current is not None
        current["data"] = {"v": "2"}
        emu.update(current)
        await rec.wait_for(lambda: rec.seen("a")[-1:] == ["2"])
        emu.delete("v1", "ConfigMap", "a", "default")
        await rec.wait_for(lambda: rec.seen("a")[-1:] == [None])

        rec.requeue_after[ObjectKey("default", "b")] = 30
        emu.create(config_map("b", v="x"))
        await rec.wait_for(lambda: len(rec.seen("b")) >= 3)
        times = [t for key, t, _ in rec.calls if key.name == "b"]
        assert times[1] - times[0] == pytest.approx(30, abs=0.1)
        assert times[2] - times[1] == pytest.approx(30, abs=0.1)


async def test_failures_back_off_with_the_default_limiter(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running_manager(emu) as (_, rec):
        rec.fail_times[ObjectKey("default", "flaky")] = 6
        emu.create(config_map("flaky"))
        await rec.wait_for(lambda: len(rec.seen("flaky")) == 7)
        times = [t for key, t, _ in rec.calls if key.name == "flaky"]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert gaps == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08, 0.16], abs=1e-6)
        # Success resets the count: the next failure starts at 5 ms again.
        rec.fail_times[ObjectKey("default", "flaky")] = 1
        current = emu.get("v1", "ConfigMap", "flaky", "default")
        assert current is not None
        current["data"] = {"v": "again"}
        emu.update(current)
        await rec.wait_for(lambda: len(rec.seen("flaky")) == 9)
        last = [t for key, t, _ in rec.calls if key.name == "flaky"][-2:]
        assert last[1] - last[0] == pytest.approx(0.005, abs=1e-6)


async def test_terminal_errors_are_not_retried(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running_manager(emu) as (manager, rec):
        rec.terminal.add(ObjectKey("default", "hopeless"))
        emu.create(config_map("hopeless"))
        emu.create(config_map("after"))
        await rec.wait_for(lambda: rec.seen("after"))
        await trio.sleep(60)
        assert len(rec.seen("hopeless")) == 1
        samples = await scrape(manager)
        assert (
            samples[
                (
                    "controller_runtime_terminal_reconcile_errors_total",
                    (("controller", "recording"),),
                )
            ]
            == 1
        )


async def test_one_key_never_reconciled_twice_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running_manager(emu, workers=4) as (_, rec):
        rec.work_seconds = 1.0
        for i in range(8):
            emu.create(config_map(f"k{i}", v="0"))
        for round_ in range(1, 4):
            for i in range(8):
                current = emu.get("v1", "ConfigMap", f"k{i}", "default")
                assert current is not None
                current["data"] = {"v": str(round_)}
                emu.update(current)
            await trio.sleep(0.3)
        await rec.wait_for(lambda: all(rec.seen(f"k{i}")[-1:] == ["3"] for i in range(8)))
        assert rec.max_parallel_per_key == 1
        assert rec.max_parallel == 4


async def test_stop_lets_the_running_reconcile_finish(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    rec = Recording(manager)
    rec.work_seconds = 10
    manager.controller("recording").for_(ConfigMap).complete(rec)
    emu.create(config_map("slow"))
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await rec.wait_for(lambda: rec.seen("slow"))
        started = trio.current_time()
        manager.stop()
    assert trio.current_time() - started == pytest.approx(10, abs=0.1)
    assert sum(rec.running.values()) == 0


async def test_metrics_name_every_family_and_readyz_waits_for_sync(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(config_map("m"))
    emu.faults.add(FaultRule(resource="configmaps", latency=20, count=1))
    client = Client.from_kubeconfig(str(emu.kubeconfig_path), registry=None)
    manager = Manager(
        client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    rec = Recording(manager)
    manager.controller("recording").for_(ConfigMap).complete(rec)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run)
        await manager.serving.wait()
        not_ready = await http_get(manager, "/readyz?verbose")
        assert not_ready.status_code == 500
        assert "informers have not synced" in not_ready.text
        assert (await http_get(manager, "/healthz")).status_code == 200
        await rec.wait_for(lambda: rec.seen("m"))
        assert (await http_get(manager, "/readyz")).status_code == 200
        names = {name for name, _ in await scrape(manager)}
        for family in (
            "workqueue_depth",
            "workqueue_adds_total",
            "workqueue_queue_duration_seconds_bucket",
            "workqueue_work_duration_seconds_bucket",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
            "workqueue_retries_total",
            "controller_runtime_reconcile_total",
            "controller_runtime_reconcile_errors_total",
            "controller_runtime_terminal_reconcile_errors_total",
            "controller_runtime_reconcile_panics_total",
            "controller_runtime_reconcile_time_seconds_bucket",
            "controller_runtime_active_workers",
            "controller_runtime_max_concurrent_reconciles",
        ):
            assert family in names, family
        manager.stop()


async def test_stop_while_caches_cannot_sync_returns_promptly(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(FaultRule(resource="configmaps", status=503))
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    manager.controller("recording").for_(ConfigMap).complete(Recording(manager))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run)
        await trio.sleep(30)
        assert not manager.cache.synced
        stopped_at = trio.current_time()
        manager.stop()
    assert trio.current_time() - stopped_at < 1


async def test_a_missing_crd_fails_the_sync_at_once_naming_it(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    manager.controller("recording").for_(ConfigMap).complete(Recording(manager))
    manager.cache.informer(Machine, namespace="default")
    started = trio.current_time()
    with pytest.raises(CacheSyncError) as caught:  # bare, not inside an exception group
        await manager.run()
    assert trio.current_time() - started < 1, "no waiting out the cache sync timeout"
    message = str(caught.value)
    assert message.startswith("CRD not installed: machines.machine.sapcloud.io (404 NotFound")
    assert "\n" not in message


async def test_a_forbidden_list_fails_the_sync_naming_the_service_account(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "narrow")
    await role(client, "get-only", [rule(["get"], ["configmaps"])], ns=None)
    await bind(client, "narrow-get", "ClusterRole", "get-only", [sa_subject("narrow")], ns=None)
    narrow = Client.from_url(emu.url, token=await token(client, "narrow"))
    manager = Manager(narrow, metrics_bind_address="0", health_probe_bind_address="0")
    manager.controller("recording").for_(ConfigMap).complete(Recording(manager))
    with pytest.raises(CacheSyncError) as caught:
        await manager.run()
    message = str(caught.value)
    assert message.startswith(
        "RBAC: the ServiceAccount default/narrow cannot list configmaps cluster-wide ("
    ), message
    assert 'cannot list resource "configmaps"' in message  # kube's own words follow


async def test_a_sync_that_never_completes_times_out_with_one_plain_error(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(FaultRule(resource="configmaps", status=503))
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(
        client, metrics_bind_address="0", health_probe_bind_address="0", cache_sync_timeout=20
    )
    manager.controller("recording").for_(ConfigMap).complete(Recording(manager))
    with pytest.raises(CacheSyncTimeout) as caught:  # 503 may heal: retried until the timeout
        await manager.run()
    assert str(caught.value) == "informers for configmaps did not sync within 20s"


async def test_an_informer_whose_crd_appears_later_still_syncs(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The informer itself keeps retrying (only the wait for it fails fast): a library user
    that waits again after installing the CRD gets a synced cache."""
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Machine)
    added = trio.Event()
    informer.add_handler(EventHandler(on_add=lambda obj, initial: added.set()))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        with pytest.raises(CacheSyncError, match=r"^CRD not installed: machines\."):
            await informer.wait_for_sync()
        install_crds(emu)
        emu.create(machine_doc("late"))
        with trio.fail_after(60):  # the informer's backoff, on the mock clock
            await added.wait()
        assert informer.has_synced
        await informer.wait_for_sync()
        assert [m.metadata.name for m in informer.lister.list()] == ["late"]
        nursery.cancel_scope.cancel()
