"""The event recorder against the emulator: recording never waits, repeats fold into counts,
the spam filter and a full queue drop and count instead of blocking."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import ConfigMap, Event
from kubetrio.api.meta import ObjectMeta
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventRecorder, EventSender, dropped_counter
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.kube import Kubectl


def obj(name: str = "cm") -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"))


@asynccontextmanager
async def running(emu: Emulator) -> AsyncIterator[tuple[Manager, EventRecorder]]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    recorder = manager.event_recorder("test-controller")
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield manager, recorder
        manager.stop()


def dropped(manager: Manager, reason: str) -> float:
    value = manager.registry.get_sample_value("kubetrio_events_dropped_total", {"reason": reason})
    return value or 0.0


async def events(emu: Emulator) -> list[Event]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    return (await client.list(Event, namespace="default")).items


@pytest.mark.kubectl
async def test_a_hot_loop_of_repeats_is_one_event_with_its_count(
    emu: Emulator, kubectl: Kubectl
) -> None:
    """On the real clock: kubectl runs in real time, and nothing here waits on a timer."""
    async with running(emu) as (_, recorder):
        for i in range(100):
            recorder.record(obj(), "Warning", "FailedSync", "boom")
            if i % 10 == 0:
                await trio.lowlevel.checkpoint()  # the sender writes meanwhile: later ones patch
        await recorder.sender.flush()
        [event] = await events(emu)
        assert (event.count, event.reason, event.message) == (100, "FailedSync", "boom")
        assert event.source.component == "test-controller"
        assert event.involved_object.name == "cm"
        assert emu.counters.get("create", "events") == 1
        assert 1 <= emu.counters.get("patch", "events") <= 10
        # Once written, a later repeat patches the same Event.
        recorder.recordf(obj(), "Warning", "FailedSync", "%s", "boom")
        await recorder.sender.flush()
        [event] = await events(emu)
        assert event.count == 101
        assert emu.counters.get("create", "events") == 1
    # kubectl, an independent client, sees the one Event and its count.
    listed = await kubectl.json("get", "events", "-n", "default")
    assert [(e["reason"], e["count"]) for e in listed["items"]] == [("FailedSync", 101)]


async def test_spam_filter_passes_a_burst_of_25_per_object_then_one_per_5_minutes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as (manager, recorder):
        for i in range(30):
            recorder.record(obj(), "Normal", f"Reason{i}", "m")
        recorder.record(obj("other"), "Normal", "Reason", "m")  # its own bucket
        await recorder.sender.flush()
        assert len(await events(emu)) == 26
        assert dropped(manager, "rate_limited") == 5
        await trio.sleep(300)
        recorder.record(obj(), "Normal", "Later", "m")
        recorder.record(obj(), "Normal", "TooSoon", "m")
        await recorder.sender.flush()
        reasons = {e.reason for e in await events(emu)}
        assert "Later" in reasons and "TooSoon" not in reasons
        assert dropped(manager, "rate_limited") == 6


async def test_a_slow_api_never_blocks_record_and_a_full_queue_drops(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(FaultRule(verb="create", resource="events", latency=30, count=1))
    registry = CollectorRegistry()
    sender = EventSender(Client.from_kubeconfig(str(emu.kubeconfig_path)),
                         dropped_counter(registry), queue_size=10)  # fmt: skip
    recorder = sender.recorder("test-controller")
    async with trio.open_nursery() as nursery:
        await nursery.start(sender.run)
        recorder.record(obj("first"), "Normal", "R", "m")
        await trio.sleep(1)  # the sender is now waiting on the slow POST
        before = trio.current_time()
        for i in range(17):
            recorder.record(obj(f"o{i}"), "Normal", "R", "m")
            recorder.record(obj(f"o{i}"), "Normal", "R", "m")  # a repeat takes no room
        assert trio.current_time() == before  # record never waited
        value = registry.get_sample_value("kubetrio_events_dropped_total", {"reason": "queue_full"})
        assert value == 2 * 7
        await sender.flush()
        written = await events(emu)
        assert len(written) == 11
        assert {e.count for e in written} == {1, 2}
        nursery.cancel_scope.cancel()


async def test_a_failing_api_drops_counted_and_later_events_still_go(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(FaultRule(verb="create", resource="events", status=500, count=2))
    async with running(emu) as (manager, recorder):
        recorder.record(obj("a"), "Normal", "R", "m")
        recorder.record(obj("b"), "Normal", "R", "m")
        recorder.record(obj("c"), "Normal", "R", "m")
        await recorder.sender.flush()
        assert [e.involved_object.name for e in await events(emu)] == ["c"]
        assert dropped(manager, "send_failed") == 2


async def test_similar_events_are_combined(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as (_, recorder):
        for i in range(15):
            recorder.record(obj(), "Warning", "FailedCreate", f"machine m{i}: quota")
            await recorder.sender.flush()
        written = await events(emu)
        assert len(written) == 10
        [combined] = [e for e in written if e.message.startswith("(combined from similar")]
        assert combined.count == 6
        assert combined.message.endswith("machine m14: quota")


async def test_stopping_the_manager_sends_what_was_recorded(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as (_, recorder):
        recorder.record(obj(), "Normal", "Stopping", "bye")
    assert [e.reason for e in await events(emu)] == ["Stopping"]


async def test_a_slow_write_holds_only_its_own_objects_events(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Writes to other objects go on while one object's write waits on a slow API server
    (the controllers' workers share the server with the sender: one write at a time fell so
    far behind that a pool of thousands filled the queue); that object's next Event waits for
    it, so its Events stay in order and a repeat patches rather than creates a second."""
    # The first write waits 20 s (within the client's 30 s timeout).
    emu.faults.add(FaultRule(verb="create", resource="events", latency=20, count=1))
    async with running(emu) as (manager, recorder):
        recorder.record(obj("slow"), "Normal", "First", "m")
        await trio.sleep(1)  # its POST is now waiting on the slow server
        recorder.record(obj("slow"), "Normal", "Second", "m")
        recorder.record(obj("slow"), "Normal", "First", "m")  # a repeat of the first
        for i in range(20):
            recorder.record(obj(f"fast{i}"), "Normal", "R", "m")
        written = trio.Event()
        fast = set()

        def seen(rt: Any, ev: Any) -> None:
            if rt.kind == "Event" and ev.entry.obj["involvedObject"]["name"].startswith("fast"):
                fast.add(ev.entry.obj["involvedObject"]["name"])
                if len(fast) == 20:
                    written.set()

        unsubscribe = emu.store.subscribe(seen)
        with trio.fail_after(10):  # well before the slow write's 20 s
            await written.wait()
        unsubscribe()
        assert {e.involved_object.name for e in await events(emu)} == {
            f"fast{i}" for i in range(20)
        }
        await recorder.sender.flush()
        slow = [e for e in await events(emu) if e.involved_object.name == "slow"]
        # One Event per reason: the repeat waited for its first write and then patched it.
        assert sorted((e.reason, e.count) for e in slow) == [("First", 2), ("Second", 1)]
        assert emu.counters.get("create", "events") == 22
        assert emu.counters.get("patch", "events") == 1
        assert dropped(manager, "queue_full") == 0
