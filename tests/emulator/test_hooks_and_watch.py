"""Fault injection, counters, the admin endpoint, persistence, and watch semantics."""

from __future__ import annotations

from pathlib import Path

import msgspec
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.emulator.watch import Watch, WatchSpec
from kubetrio.sim import serve_world
from tests.helpers.kube import configmap as cm

CMS = "/api/v1/namespaces/default/configmaps"


async def test_fault_status_with_retry_after(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(verb="list", resource="configmaps", status=429, retry_after=7, count=1)
    r = await client.get(CMS)
    assert r.status == 429
    assert r.headers["retry-after"] == "7"
    assert r.json()["reason"] == "TooManyRequests"
    assert r.json()["details"]["retryAfterSeconds"] == 7
    assert (await client.get(CMS)).status == 200  # count=1: used up
    emu.faults.add(verb="get", resource="configmaps", name="only-*", status=503)
    await client.request("POST", CMS, cm("only-this"))
    await client.request("POST", CMS, cm("other"))
    assert (await client.get(f"{CMS}/only-this")).status == 503
    assert (await client.get(f"{CMS}/other")).status == 200


async def test_fault_latency_runs_on_the_emulator_clock(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(verb="list", resource="pods", latency=120.0)
    start = trio.current_time()
    r = await client.get("/api/v1/pods")
    assert r.status == 200
    assert trio.current_time() - start >= 120.0


async def test_counters_and_admin_endpoint(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.counters.reset()
    await client.request("POST", CMS, cm("a"))
    await client.get(CMS)
    await client.get(CMS)
    await client.get(f"{CMS}/a")
    assert emu.counters.get("create", "configmaps") == 1
    assert emu.counters.get("list", "configmaps") == 2
    assert emu.counters.get("get", "configmaps") == 1
    snap = (await client.get("/_emulator/counters")).json()
    assert snap == {"create configmaps": 1, "get configmaps": 1, "list configmaps": 2}
    await client.request("DELETE", "/_emulator/counters")
    assert emu.counters.total() == 0
    r = await client.request(
        "POST", "/_emulator/faults", {"verb": "get", "status": 500, "count": 1}
    )
    assert r.status == 201
    assert len(emu.faults.rules) == 1
    assert (await client.get(f"{CMS}/a")).status == 500
    r = await client.request("POST", "/_emulator/faults", {"verb": "get", "bogus": 1})
    assert r.status == 400 and "bogus" in r.json()["message"]
    await client.request("POST", "/_emulator/faults", {"verb": "get", "status": 500})
    await client.request("DELETE", "/_emulator/faults")
    assert emu.faults.rules == []
    assert (await client.get(f"{CMS}/a")).status == 200


async def test_watch_cut_by_fault(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with client.watch(f"{CMS}?watch=true") as w:
        with trio.fail_after(5):
            await emu.faults.wait_open_watches(lambda n: n > 0)
        assert emu.faults.cut_watches() == 1
        assert await w.next() is None
        assert w.broken and not w.ended
    emu.faults.add(verb="watch", resource="configmaps", cut_watch_after=10.0)
    async with client.watch(f"{CMS}?watch=true&timeoutSeconds=100") as w:
        assert await w.next() is None
        assert w.broken
    async with client.watch(f"{CMS}?watch=true") as w:  # admin endpoint does the same
        with trio.fail_after(5):
            await emu.faults.wait_open_watches(lambda n: n > 0)
        emu.faults.clear()
        r = await client.request("POST", "/_emulator/cut-watches")
        assert r.json() == {"cut": 1}
        assert await w.next() is None


async def test_watch_history_expiry_over_admin(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    created = (await client.request("POST", CMS, cm("a"))).json()
    rv = created["metadata"]["resourceVersion"]
    await client.request("POST", CMS, cm("b"))
    await client.request("POST", "/_emulator/expire-watch-history")
    async with client.watch(f"{CMS}?watch=1&resourceVersion={rv}") as w:
        ev = await w.next()
        assert ev is not None and ev["type"] == "ERROR"
        assert ev["object"]["code"] == 410
        assert await w.next() is None and w.ended


async def test_injected_410_on_a_watch_is_an_error_event_and_counted(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """As kube-apiserver answers a watch from a compacted resourceVersion: the stream opens
    (200) and says 410 Expired in an ERROR event, with no initial state before it."""
    created = (await client.request("POST", CMS, cm("a"))).json()
    emu.faults.add(verb="list", resource="configmaps", status=500, count=1)
    for query in (f"resourceVersion={created['metadata']['resourceVersion']}", ""):
        emu.faults.add(verb="watch", resource="configmaps", status=410, count=1)
        async with client.watch(f"{CMS}?watch=1&{query}") as w:
            ev = await w.next()
            assert ev is not None and ev["type"] == "ERROR", ev
            assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
            assert await w.next() is None and w.ended
    assert (await client.get(CMS)).status == 500
    assert emu.faults.injected == {("watch", 410): 2, ("list", 500): 1}
    async with client.watch(f"{CMS}?watch=1") as w:  # the rules are used up
        ev = await w.next()
        assert ev is not None and ev["type"] == "ADDED"


async def test_watch_initial_state_selectors_bookmarks_timeout(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await client.request("POST", CMS, cm("in", {"app": "x"}))
    await client.request("POST", CMS, cm("out", {"app": "y"}))
    start = trio.current_time()
    async with client.watch(
        f"{CMS}?watch=true&labelSelector=app%3Dx&allowWatchBookmarks=true&timeoutSeconds=200"
    ) as w:
        ev = await w.next()
        assert ev is not None and (ev["type"], ev["object"]["metadata"]["name"]) == ("ADDED", "in")
        # "out" starts matching: ADDED; "in" stops matching: DELETED.
        await client.request(
            "PATCH",
            f"{CMS}/out",
            {"metadata": {"labels": {"app": "x"}}},
            content_type="application/merge-patch+json",
        )
        await client.request(
            "PATCH",
            f"{CMS}/in",
            {"metadata": {"labels": {"app": "z"}}},
            content_type="application/merge-patch+json",
        )
        seen = [await w.next(), await w.next()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen if e] == [
            ("ADDED", "out"),
            ("DELETED", "in"),
        ]
        bookmark = await w.next()  # 60 s of mock time later
        assert bookmark is not None and bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["metadata"] == {"resourceVersion": str(emu.store.rv)}
        rest = [e async for e in w]
        assert [e["type"] for e in rest] == ["BOOKMARK", "BOOKMARK"]
        assert w.ended and not w.broken
    assert 200 <= trio.current_time() - start < 201


async def test_client_disconnect_releases_watch(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for _ in range(3):
        async with client.watch(f"{CMS}?watch=true"):
            with trio.fail_after(5):
                await emu.faults.wait_open_watches(lambda n: n > 0)
    with trio.fail_after(5):
        await emu.faults.wait_open_watches(lambda n: n == 0)


async def test_persistence_restores_objects_and_resource_versions(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    state = tmp_path / "state.json"
    async with serve_world(state=state) as emu:
        client = EmuClient(emu.url, emu.token)
        from tests.helpers.crds import MACHINE_CRD

        await client.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", MACHINE_CRD
        )
        m = {
            "apiVersion": "machine.sapcloud.io/v1alpha1",
            "kind": "Machine",
            "metadata": {"name": "m1"},
        }
        await client.request(
            "POST", "/apis/machine.sapcloud.io/v1alpha1/namespaces/default/machines", m
        )
        await client.request("POST", CMS, cm("kept", a="1"))
        assert emu.persister is not None
        with trio.fail_after(10):
            await emu.persister.wait_written()  # the debounced background write
        rv_before = emu.store.rv
    assert state.exists()
    async with serve_world(state=state) as emu:
        client = EmuClient(emu.url, emu.token)
        r = await client.get(f"{CMS}/kept")
        assert r.status == 200 and r.json()["data"] == {"a": "1"}
        r = await client.get("/apis/machine.sapcloud.io/v1alpha1/namespaces/default/machines/m1")
        assert r.status == 200
        assert emu.store.rv == rv_before
        r = await client.request("POST", CMS, cm("new"))
        assert int(r.json()["metadata"]["resourceVersion"]) == rv_before + 1
        # History did not survive the restart: older positions are 410, like a compacted etcd.
        async with client.watch(f"{CMS}?watch=1&resourceVersion=1") as w:
            ev = await w.next()
            assert ev is not None and ev["object"]["code"] == 410


async def test_slow_watcher_that_falls_behind_the_window_gets_410(
    mock_clock: trio.testing.MockClock,
) -> None:
    """Writers never wait for readers: a reader stuck while the window moves on gets 410."""
    async with serve_world(window=5) as emu:
        rt = emu.resource("configmaps")
        gate = trio.Event()
        sent: list[bytes] = []

        class StuckClient:
            async def send(self, data: bytes) -> None:
                await gate.wait()
                sent.append(data)

        start = emu.store.rv
        spec = WatchSpec(
            rt=rt,
            namespace=None,
            pred=None,
            resource_version=str(start),
            bookmarks=False,
            bookmark_interval=60.0,
            timeout=None,
            cut_after=None,
        )
        watch = Watch(emu.store, emu.faults, spec)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch.run, StuckClient())
            emu.create(cm("first"))
            await trio.testing.wait_all_tasks_blocked()  # the watch is now stuck sending
            for i in range(10):
                emu.create(cm(f"more-{i}"))  # returns at once although the reader is stuck
            gate.set()
        assert b'"name":"first"' in sent[0]
        error = msgspec.json.decode(sent[1])
        assert error["type"] == "ERROR" and error["object"]["code"] == 410
        first_rv = start + 1
        assert error["object"]["message"].startswith(f"too old resource version: {first_rv} (")


async def test_exact_list_and_streaming_initial_events(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    first = (await client.request("POST", CMS, cm("one"))).json()["metadata"]["resourceVersion"]
    await client.request("POST", CMS, cm("two"))
    r = (await client.get(f"{CMS}?resourceVersion={first}&resourceVersionMatch=Exact")).json()
    assert [i["metadata"]["name"] for i in r["items"]] == ["one"]
    assert r["metadata"]["resourceVersion"] == first
    # A resourceVersion the server has not reached: it waits for it (3 s), then gives up.
    r = await client.get(f"{CMS}?resourceVersion={emu.store.rv + 5}&resourceVersionMatch=Exact")
    assert r.status == 504
    assert r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    r = await client.get(f"{CMS}?resourceVersionMatch=Exact")
    assert r.status == 422
    assert r.json()["details"]["kind"] == "ListOptions"
    query = (
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    )
    async with client.watch(f"{CMS}?{query}") as w:
        got = [await w.next() for _ in range(3)]
        assert [(e or {}).get("type") for e in got] == ["ADDED", "ADDED", "BOOKMARK"]
        end = got[2]["object"]["metadata"]  # type: ignore[index]
        assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert end["resourceVersion"] == str(emu.store.rv)
        await client.request("POST", CMS, cm("three"))
        ev = await w.next()
        assert ev is not None and (ev["type"], ev["object"]["metadata"]["name"]) == (
            "ADDED",
            "three",
        )
    r = await client.get(f"{CMS}?watch=1&sendInitialEvents=true")
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "resourceVersionMatch"
