"""Where the informer lists (a server without streaming lists, or ``streaming_lists=False``),
its initial LIST asks for pages (``limit=500`` at ``resourceVersion=0``), as client-go's
reflector asks, and is answered whole, as the watch cache answers it; a paged list
whose continue token expires falls back to one full list, as client-go's pager does; the
emulator answers a compacted continue with 410 Expired, as kube-apiserver does.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator, EmulatorOptions, FaultRule
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.testing import eventually
from tests.helpers.kube import configmap

OBJECTS = 1200


def seed(emu: Emulator, count: int) -> None:
    for i in range(count):
        body = configmap(f"cm-{i:04d}", v=str(i))
        body["metadata"]["namespace"] = "default"
        emu.create(body)


def list_queries(audit: Path) -> list[tuple[int, dict[str, str]]]:
    """(status, query) of every LIST of configmaps the audit log recorded, in order."""
    out = []
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        if event["verb"] != "list" or event["objectRef"]["resource"] != "configmaps":
            continue
        query = {k: v[0] for k, v in parse_qs(urlsplit(event["requestURI"]).query).items()}
        out.append((event["responseStatus"]["code"], query))
    return out


async def test_initial_list_asks_pages_and_the_watch_cache_answers_it_whole(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """client-go's reflector asks ``limit=500&resourceVersion=0``; the watch cache serves
    "any version" unpaged, so the sync is one request."""
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        seed(emu, OBJECTS)
        informer = Informer(
            Client.from_url(emu.url, token=emu.token), ConfigMap, streaming_lists=False
        )
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(informer.run)
                await informer.wait_for_sync()
                nursery.cancel_scope.cancel()
    assert len(informer.store) == OBJECTS
    lists = list_queries(audit)
    assert [status for status, _ in lists] == [200], lists
    assert lists[0][1] == {"limit": "500", "resourceVersion": "0"}, lists


async def test_expired_continue_token_falls_back_to_a_full_list(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """A consistent list (no resourceVersion) is paged; a continue token compacted away
    between pages makes the client list once more, whole."""
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        seed(emu, OBJECTS)
        # The first two pages wait 10 s each in the emulator, so the history can be compacted
        # between page 1 and page 2 (a write, then every event before it forgotten).
        emu.faults.add(FaultRule(verb="list", resource="configmaps", latency=10.0, count=2))
        client = Client.from_url(emu.url, token=emu.token)
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:

                async def compact() -> None:
                    await trio.sleep(15)  # page 1 served at 10 s; page 2 waits until 20 s
                    late = configmap("late", v="x")
                    late["metadata"]["namespace"] = "default"
                    emu.create(late)
                    emu.faults.expire_watch_history()

                nursery.start_soon(compact)
                result = await client.list(ConfigMap, namespace="default")
    # The full list holds everything, the object written during the list included.
    assert len(result.items) == OBJECTS + 1
    assert "late" in {cm.metadata.name for cm in result.items}
    lists = list_queries(audit)
    assert [status for status, _ in lists] == [200, 410, 200], lists
    assert "continue" in lists[1][1]
    full = lists[2][1]
    assert "limit" not in full and "continue" not in full and "resourceVersion" not in full


async def test_emulator_answers_410_expired_for_a_compacted_continue(
    emu: Emulator, client: EmuClient
) -> None:
    """What kube-apiserver answers when a continue token's snapshot was compacted."""
    seed(emu, 3)
    path = "/api/v1/namespaces/default/configmaps"
    first = await client.get(f"{path}?limit=2")
    token = first.json()["metadata"]["continue"]
    assert token
    late = configmap("late", v="x")
    late["metadata"]["namespace"] = "default"
    emu.create(late)
    emu.faults.expire_watch_history()
    second = await client.get(f"{path}?{urlencode({'limit': 2, 'continue': token})}")
    assert second.status == 410
    status = second.json()
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Expired", 410)
    assert "continue" in status["message"]


async def test_a_paged_list_at_an_old_resource_version_is_exact(
    emu: Emulator, client: EmuClient
) -> None:
    """kube-apiserver's legacy rule: ``resourceVersion=N`` (not 0) with ``limit`` and no
    ``resourceVersionMatch`` lists exactly at N, so a compacted N answers 410 Expired; without
    ``limit`` it means "not older than N" and is served."""
    seed(emu, 3)
    path = "/api/v1/namespaces/default/configmaps"
    old = (await client.get(path)).json()["metadata"]["resourceVersion"]
    late = configmap("late", v="x")
    late["metadata"]["namespace"] = "default"
    emu.create(late)
    emu.faults.expire_watch_history()
    paged = await client.get(f"{path}?{urlencode({'resourceVersion': old, 'limit': 2})}")
    assert paged.status == 410, paged.body
    unpaged = await client.get(f"{path}?{urlencode({'resourceVersion': old})}")
    assert unpaged.status == 200 and len(unpaged.json()["items"]) == 4


async def test_a_relist_after_an_expired_watch_is_one_unpaged_list(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """client-go's reflector pages only lists at resourceVersion "" or "0": a relist at its
    last resourceVersion is unpaged ("not older than", from the watch cache), so a watch's 410
    costs one LIST, not a 410 from an exact paged list and then a list from scratch."""
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        seed(emu, 3)
        informer = Informer(
            Client.from_url(emu.url, token=emu.token), ConfigMap, streaming_lists=False
        )
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(informer.run)
                await informer.wait_for_sync()
                await emu.faults.wait_open_watches(lambda n: n >= 1)
                # In one step: the watch cut, a write, its history forgotten; the informer's
                # new watch from its last resourceVersion gets 410, then it relists.
                emu.faults.cut_watches()
                late = configmap("late", v="x")
                late["metadata"]["namespace"] = "default"
                emu.create(late)
                emu.faults.expire_watch_history()
                await eventually(lambda: informer.relists >= 2, on=[informer])
                nursery.cancel_scope.cancel()
    assert informer.store.get(("default", "late")) is not None
    lists = list_queries(audit)
    assert [status for status, _ in lists] == [200, 200], lists
    relist = lists[1][1]
    assert "limit" not in relist and relist["resourceVersion"] not in ("", "0"), lists
