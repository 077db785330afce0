"""Property: with writes and watches racing, every watcher opened at resourceVersion R receives
exactly the store's events after R, in order, none missing, none extra."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim import serve_world

pytestmark = pytest.mark.slow

CMS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
SENTINEL = "zz-sentinel"

Op = tuple[str, int]
ops_strategy = st.lists(
    st.tuples(st.sampled_from(["create", "update", "delete", "secret"]), st.integers(0, 4)),
    min_size=1,
    max_size=25,
)
watchers_strategy = st.lists(
    st.tuples(st.integers(0, 25), st.floats(0, 1), st.booleans()), min_size=1, max_size=5
)


async def _apply(client: EmuClient, op: Op, counter: list[int]) -> None:
    kind, i = op
    name = f"cm-{i}"
    counter[0] += 1
    if kind == "create":
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"i": str(i % 2)}},
        }
        await client.request("POST", CMS, body)
    elif kind == "update":
        patch = {"data": {"n": str(counter[0])}, "metadata": {"labels": {"i": str(counter[0] % 2)}}}
        await client.request(
            "PATCH", f"{CMS}/{name}", patch, content_type="application/merge-patch+json"
        )
    elif kind == "delete":
        await client.request("DELETE", f"{CMS}/{name}")
    else:  # writes to another resource move the global resourceVersion too
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s-{counter[0]}"}}
        await client.request("POST", SECRETS, body)


async def _scenario(ops: list[Op], watchers: list[tuple[int, float, bool]], writers: int) -> None:
    async with serve_world() as emu:
        client = EmuClient(emu.url, emu.token)
        rt = emu.resource("configmaps")
        reached = [trio.Event() for _ in range(len(ops) + 1)]
        reached[0].set()
        done = [0]
        counter = [0]
        received: list[tuple[int, list[tuple[str, str, int]]]] = []

        async def writer(share: list[Op]) -> None:
            for op in share:
                await _apply(client, op, counter)
                done[0] += 1
                reached[done[0]].set()

        async def watcher(after: int, fraction: float, selective: bool) -> None:
            await reached[min(after, len(ops))].wait()
            start = max(1, int(fraction * emu.store.rv))  # "0" means "current state, then live"
            query = f"{CMS}?watch=true&resourceVersion={start}"
            if selective:
                query += "&fieldSelector=metadata.name%21%3Dcm-0"
            got: list[tuple[str, str, int]] = []
            async with client.watch(query) as w:
                async for ev in w:
                    md: dict[str, Any] = ev["object"]["metadata"]
                    got.append((ev["type"], md["name"], int(md["resourceVersion"])))
                    if md["name"] == SENTINEL:
                        break
            received.append((start if not selective else -start - 1, got))

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for after, fraction, selective in watchers:
                    nursery.start_soon(watcher, after, fraction, selective)
                async with trio.open_nursery() as writes:
                    for k in range(writers):
                        writes.start_soon(writer, ops[k::writers])
                # Every watcher must be open before the sentinel, or it could miss nothing and
                # still wait forever; opening is ordered by the writes it waits for.
                await emu.faults.wait_open_watches(lambda n: n + len(received) >= len(watchers))
                await client.request(
                    "POST",
                    CMS,
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SENTINEL}},
                )
        history = emu.store.history(rt)
        for key, got in received:
            selective = key < 0
            start = -key - 1 if selective else key
            want = [
                (e.type, e.entry.obj["metadata"]["name"], e.rv)
                for e in history
                if e.rv > start and not (selective and e.entry.obj["metadata"]["name"] == "cm-0")
            ]
            assert got == want, f"watch from {start} (selective={selective})"


@settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(ops=ops_strategy, watchers=watchers_strategy, writers=st.integers(1, 3))
def test_watchers_see_exactly_the_events_after_their_resource_version(
    ops: list[Op], watchers: list[tuple[int, float, bool]], writers: int
) -> None:
    trio.run(_scenario, ops, watchers, writers)
