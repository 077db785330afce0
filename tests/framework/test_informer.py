"""Informers and the shared cache against the emulator: sync, handlers, faults, cancellation."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubetrio.api.core import Node, Pod
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from tests.helpers.kube import IO_AUTOJUMP, Kubectl, pod


class Recorder:
    """Records handler calls per key and lets a test wait for a condition on them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []  # (kind of call, name, resourceVersion)
        self.initial: list[str] = []
        self._changed = trio.Event()

    def handler(self) -> EventHandler[Any]:
        return EventHandler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)

    def _note(self, call: str, obj: Any) -> None:
        self.calls.append((call, obj.metadata.name, obj.metadata.resource_version))
        self._changed.set()
        self._changed = trio.Event()

    def on_add(self, obj: Any, initial: bool) -> None:
        if initial:
            self.initial.append(obj.metadata.name)
        self._note("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        assert old.metadata.name == new.metadata.name
        self._note("update", new)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self._note("tombstone", obj.obj)
        else:
            self._note("delete", obj)

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._changed.wait()

    def names(self, call: str) -> list[str]:
        return [name for kind, name, _ in self.calls if kind == call]


async def started(nursery: trio.Nursery, informer: Informer[Any]) -> Informer[Any]:
    nursery.start_soon(informer.run)
    await informer.wait_for_sync()
    return informer


@pytest.mark.kubectl
async def test_sync_then_live_events_from_an_independent_client(
    emu: Emulator, kubectl: Kubectl
) -> None:
    for name in ("a", "b", "c"):
        emu.create(pod(name))
    recorder = Recorder()
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.add_handler(recorder.handler())
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        assert sorted(recorder.initial) == ["a", "b", "c"]
        await kubectl.run("run", "d", "--image=busybox", "--restart=Never")
        await kubectl.run("label", "pod", "a", "tier=web")
        await kubectl.run("delete", "pod", "b", "--grace-period=0", "--force")
        await recorder.wait_for(lambda: "b" in recorder.names("delete"))
        assert "d" in recorder.names("add") and "a" in recorder.names("update")
        assert informer.lister.get("default", "a").metadata.labels == {"tier": "web"}  # type: ignore[union-attr]
        assert informer.lister.get("default", "b") is None
        nursery.cancel_scope.cancel()


async def test_indexes_and_listers(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    emu.create(pod("p1", node="n1", app="web"))
    emu.create(pod("p2", node="n1", app="db"))
    emu.create(pod("p3", node="n2", app="web"))
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.add_index("node", lambda p: [p.spec.node_name] if p.spec.node_name else [])
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        lister = informer.lister
        assert sorted(p.name for p in lister.by_index("node", "n1")) == ["p1", "p2"]
        assert sorted(p.name for p in lister.list(selector={"app": "web"})) == ["p1", "p3"]
        assert [p.name for p in lister.list("default", lambda p: p.name.endswith("2"))] == ["p2"]
        assert lister.list("kube-system") == []
        # A pod moving node is re-filed; a deleted one leaves every index.
        moved = emu.get("v1", "Pod", "p3", "default")
        assert moved is not None
        emu.delete("v1", "Pod", "p1", "default", grace=0)
        emu.create(pod("p4", node="n2"))
        await recorder.wait_for(lambda: "p4" in recorder.names("add"))
        assert sorted(p.name for p in lister.by_index("node", "n1")) == ["p2"]
        assert sorted(p.name for p in lister.by_index("node", "n2")) == ["p3", "p4"]
        with pytest.raises(KeyError, match="no index named 'zone'"):
            lister.by_index("zone", "a")
        nursery.cancel_scope.cancel()


async def test_late_handler_gets_existing_objects(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(pod("x"))
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        late = Recorder()
        informer.add_handler(late.handler())
        assert late.initial == ["x"]
        nursery.cancel_scope.cancel()


async def test_cut_watch_resumes_from_last_version_without_relist(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    recorder = Recorder()
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.add_handler(recorder.handler())
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        for round_ in range(3):
            await emu.faults.wait_open_watches(lambda n: n == 1)
            emu.faults.cut_watches()
            emu.create(pod(f"after-cut-{round_}"))
        await recorder.wait_for(lambda: len(recorder.names("add")) == 3)
        assert informer.relists == 1
        nursery.cancel_scope.cancel()


async def test_expired_history_relists_and_delivers_missed_deletes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for name in ("keep", "change", "vanish"):
        emu.create(pod(name))
    recorder = Recorder()
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.add_handler(recorder.handler())
    # Every watch is refused for a while: changes happen while the informer is blind.
    blind = emu.faults.add(FaultRule(verb="watch", resource="pods", status=503))
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        changed = emu.get("v1", "Pod", "change", "default")
        assert changed is not None
        changed["metadata"]["labels"] = {"v": "2"}
        emu.update(changed)
        emu.delete("v1", "Pod", "vanish", "default", grace=0)
        emu.create(pod("new"))
        emu.faults.expire_watch_history()
        emu.faults.remove(blind.id)
        await recorder.wait_for(lambda: "vanish" in recorder.names("tombstone"))
        await recorder.wait_for(lambda: "new" in recorder.names("add"))
        assert "change" in recorder.names("update")
        assert "keep" not in recorder.names("update"), "unchanged objects are not re-announced"
        assert informer.relists == 2
        assert sorted(p.name for p in informer.lister.list()) == ["change", "keep", "new"]
        nursery.cancel_scope.cancel()


async def test_shared_cache_opens_one_watch_per_kind(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    cache = InformerCache(Client.from_kubeconfig(str(emu.kubeconfig_path)))
    first = cache.informer(Pod)
    assert cache.informer(Pod) is first
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        nodes = cache.informer(Node)  # requested after start: started at once
        await cache.wait_for_sync()
        assert cache.synced and nodes.has_synced
        await emu.faults.wait_open_watches(lambda n: n == 2)
        assert len(cache.informers) == 2
        nursery.cancel_scope.cancel()


async def test_cancelling_twenty_watches_is_prompt(emu: Emulator) -> None:
    """Prompt on the test's mock clock: a watch that had to wait for its stream to end (a
    bookmark, the server's timeout) before it noticed the cancellation would let the clock jump
    to that wait's end."""
    cache = InformerCache(Client.from_kubeconfig(str(emu.kubeconfig_path)))
    for i in range(20):
        cache.informer(Pod, namespace=f"ns-{i}")
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        await emu.faults.wait_open_watches(lambda n: n == 20)
        started_at = trio.current_time()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - started_at < 2.0


async def test_refused_access_is_logged_clearly_and_retried(
    caplog: pytest.LogCaptureFixture, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_world(token="t0ken") as emu:
        informer = Informer(Client.from_url(emu.url, token="not-t0ken"), Pod)
        caplog.set_level(logging.WARNING, logger="kubetrio.informer")
        with trio.move_on_after(10):
            await informer.run()
        assert not informer.has_synced
        failures = [r for r in caplog.records if "list failed" in r.getMessage()]
        assert len(failures) >= 3, "the informer keeps retrying with backoff"
        assert all(r.exc_info is None for r in failures), "a clear line, not a traceback"
        assert "401 Unauthorized" in failures[0].getMessage()
        assert "t0ken" not in caplog.text


async def test_a_throttled_watch_is_retried_without_a_warning(
    emu: Emulator, caplog: pytest.LogCaptureFixture, mock_clock: trio.testing.MockClock
) -> None:
    """kube-apiserver answers watches with 429 while a kind's watch cache (re)initializes (after
    its CRD changed): an expected pause, retried, that a person need not look at; a 500 is
    still a warning."""
    caplog.set_level(logging.INFO, logger="kubetrio.informer")
    recorder = Recorder()
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.streaming_lists = False  # the throttled request is the watch after the list
    informer.add_handler(recorder.handler())
    emu.faults.add(
        FaultRule(
            verb="watch",
            resource="pods",
            status=429,
            message="storage is (re)initializing",
            retry_after=1,
            count=2,
        )
    )
    async with trio.open_nursery() as nursery:
        await started(nursery, informer)
        emu.create(pod("after"))
        await recorder.wait_for(lambda: "after" in recorder.names("add"))
        emu.faults.add(FaultRule(verb="watch", resource="pods", status=500, count=1))
        emu.faults.cut_watches()
        emu.create(pod("later"))
        await recorder.wait_for(lambda: "later" in recorder.names("add"))
        nursery.cancel_scope.cancel()
    throttled = [r for r in caplog.records if "throttled" in r.getMessage()]
    assert len(throttled) == 2 and all(r.levelno == logging.INFO for r in throttled)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "500" in warnings[0], warnings


# -- the key property -------------------------------------------------------------------

NAMES = ["a", "b", "c", "d"]
WRITES = st.tuples(st.sampled_from(["create", "update", "delete"]), st.sampled_from(NAMES))
FAULTS = st.tuples(
    st.sampled_from(["cut", "expire", "blind", "latency", "refuse-list", "throttle"]), st.none()
)
# Each step may let time pass afterwards, so the informer runs between writes and faults
# (without it every write would land before the informer looks, and the faults hit nothing).
STEPS = st.tuples(st.one_of(WRITES, WRITES, FAULTS), st.sampled_from([0.0, 0.0, 0.05, 1.0, 5.0]))


def check_sequences(calls: list[tuple[str, str, str]], truth: dict[str, str]) -> None:
    """Per key: add only when absent, update/delete only when present; ends as the server."""
    present: dict[str, str] = {}
    for call, name, rv in calls:
        if call == "add":
            assert name not in present, f"add of {name} while present: {calls}"
            present[name] = rv
        elif call == "update":
            assert name in present, f"update of {name} after delete: {calls}"
            present[name] = rv
        else:
            assert name in present, f"delete of {name} never added: {calls}"
            del present[name]
    assert present == truth, f"handlers end at {present}, server has {truth}"


async def converge_example(steps: list[tuple[tuple[str, str | None], float]]) -> None:
    async with serve_world(window=50) as emu:
        client = Client.from_kubeconfig(str(emu.kubeconfig_path))
        informer = Informer(client, Pod)
        recorder = Recorder()
        informer.add_handler(recorder.handler())
        async with trio.open_nursery() as nursery:
            await started(nursery, informer)
            version = 0
            for (op, name), pause in steps:
                exists = name is not None and emu.get("v1", "Pod", name, "default") is not None
                if op == "create" and name and not exists:
                    emu.create(pod(name))
                elif op == "update" and name and exists:
                    current = emu.get("v1", "Pod", name, "default")
                    assert current is not None
                    version += 1
                    current["metadata"]["labels"] = {"v": str(version)}
                    emu.update(current)
                elif op == "delete" and name and exists:
                    emu.delete("v1", "Pod", name, "default", grace=0)
                elif op == "cut":
                    emu.faults.cut_watches()
                elif op == "expire":
                    emu.faults.expire_watch_history()
                    emu.faults.cut_watches()
                elif op == "blind":
                    emu.faults.add(FaultRule(verb="watch", resource="pods", status=500, count=2))
                elif op == "latency":
                    emu.faults.add(FaultRule(resource="pods", latency=0.5, count=3))
                elif op == "refuse-list":
                    emu.faults.add(FaultRule(verb="list", resource="pods", status=503, count=2))
                elif op == "throttle":
                    emu.faults.add(FaultRule(resource="pods", status=429, retry_after=1, count=2))
                if pause:
                    await trio.sleep(pause)
            emu.faults.clear()
            truth_list = await client.list(Pod)
            truth = {p.name: p.metadata.resource_version for p in truth_list.items}

            def converged() -> bool:
                cached = {p.name: p.metadata.resource_version for p in informer.lister.list()}
                return cached == truth

            with trio.fail_after(600):
                await recorder.wait_for(converged)
            check_sequences(recorder.calls, truth)
            nursery.cancel_scope.cancel()


@pytest.mark.slow
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=30))
# Writes made while the watch is down and its history then expires: only a relist can tell the
# handlers about them (the delete as a tombstone).
@example(
    steps=[
        (("create", "a"), 1.0),
        (("cut", None), 0.0),
        (("delete", "a"), 0.0),
        (("expire", None), 5.0),
    ]
)
@example(
    steps=[
        (("create", "a"), 1.0),
        (("create", "b"), 1.0),
        (("blind", None), 0.0),
        (("cut", None), 0.0),
        (("update", "a"), 0.0),
        (("delete", "b"), 0.0),
        (("create", "c"), 0.0),
        (("expire", None), 0.0),
    ]
)
def test_cache_converges_to_the_server_whatever_the_faults(
    steps: list[tuple[tuple[str, str | None], float]],
) -> None:
    trio.run(converge_example, steps, clock=trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP))
