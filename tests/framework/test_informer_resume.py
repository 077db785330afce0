"""Watches that resume: a watch cut mid-stream (a flaky load balancer) is resumed from the last
resourceVersion at once, so cuts every few seconds barely change how fast the cache follows.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Pod
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from tests.helpers.kube import pod

pytestmark = pytest.mark.slow

CHANGES = 12
SPACING = 1.3  # mock seconds between changes: out of step with the cuts, so some land near one
CUT_EVERY = 3.0


async def reaction_times(emu: Emulator, prefix: str) -> list[float]:
    """Mock seconds from each create to the informer's add, over ``CHANGES`` creates."""
    seen: dict[str, float] = {}
    arrived = trio.Event()

    def on_add(obj: Any, initial: bool) -> None:
        nonlocal arrived
        seen[obj.metadata.name] = trio.current_time()
        arrived.set()
        arrived = trio.Event()

    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Pod)
    informer.add_handler(EventHandler(on_add=on_add))
    times: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        await informer.wait_for_sync()
        for i in range(CHANGES):
            await trio.sleep(SPACING)
            name = f"{prefix}-{i}"
            created = trio.current_time()
            emu.create(pod(name))
            while name not in seen:
                await arrived.wait()
            times.append(seen[name] - created)
        nursery.cancel_scope.cancel()
    return times


async def test_cut_watches_resume_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(120):
        uncut = await reaction_times(emu, "uncut")
        opened = emu.counters.get("watch", "pods")
        emu.faults.add(FaultRule(verb="watch", resource="pods", cut_watch_after=CUT_EVERY))
        cut = await reaction_times(emu, "cut")
    watches = emu.counters.get("watch", "pods") - opened
    assert watches >= CHANGES * SPACING / CUT_EVERY - 1, watches  # the cuts did happen
    # Mock time hardly moves while a request is in flight, so the uncut figures are near zero;
    # allow one autojump step of slack on top of the 2x bound.
    slack = 0.1
    assert statistics.median(cut) <= 2 * statistics.median(uncut) + slack, (uncut, cut)
    assert max(cut) <= 2 * max(uncut) + slack, (uncut, cut)
    print(
        f"reaction p50/max uncut {statistics.median(uncut):.3f}/{max(uncut):.3f} s, "
        f"cut every {CUT_EVERY} s {statistics.median(cut):.3f}/{max(cut):.3f} s, {watches} watches"
    )
