"""A drain decides what to evict only from a pod cache that caught up with its cordon, and a
deleted machine takes its bootstrap token with it.

The race: a pod bound to the node just before its Machine is deleted is not yet in
the drain's cache; a drain that trusts the cache as it stands finishes without it and the pod is
left on a deleted Node. The pod watch is held back here (a cut, then an injected latency on the
re-watch), so the cache misses the pod for as long as the test wants, every run.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Pod, Secret
from kubetrio.api.machine import PHASE_PENDING
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.drain.catchup import CATCH_UP_TIMEOUT
from kubetrio.controllers.machine.drain.drain import DrainOptions
from kubetrio.controllers.machine.status import INITIATE_DRAIN, deletion_step
from kubetrio.emulator import Emulator
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.drain import drainer, node
from tests.helpers.machines import (
    MACHINE_API,
    install_crds,
    machine_doc,
    machine_manager,
    running_machine,
    seed_class,
)

pytestmark = pytest.mark.slow

DRAIN_INFORMERS = 6  # nodes, pods, claims, volumes, attachments, budgets
HELD_BACK = 20.0  # seconds the pod informer's re-watch is delayed (mock clock)


def pinned_pod(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "i"}],
        },
    }


async def hold_back_pods(emu: Emulator, seconds: float, watches: int) -> None:
    """Cut every watch once all ``watches`` are open (one still being set up would escape the
    cut), and delay the pods re-watch by ``seconds``."""
    await emu.faults.wait_open_watches(lambda n: n >= watches)
    emu.faults.add(verb="watch", resource="pods", latency=seconds, count=1)
    emu.faults.cut_watches()


async def test_pod_pinned_just_before_the_deletion_is_drained(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        # Hold the pod watch back: cut every watch, and the pods re-watch waits HELD_BACK.
        await hold_back_pods(emu, HELD_BACK, len(h.manager.cache.informers))
        emu.create(pinned_pod("late", "m-1"))
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        started = trio.current_time()
        await h.wait_gone("m-1")
        assert emu.counters.get("create", "pods", "eviction") == 1
        assert emu.get("v1", "Pod", "late", "default") is None
        assert await h.client.get_or_none(Pod, "late", namespace="default") is None
        # It waited for the cache (the held-back watch), then went on at once.
        assert HELD_BACK <= trio.current_time() - started <= HELD_BACK + 10


async def test_a_machine_that_never_joined_takes_its_token_with_it(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=100_000)  # never joins while the test runs
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_PENDING)
        name = token_secret_name("m-1", "default")
        assert await h.client.get_or_none(Secret, name, namespace=TOKEN_NAMESPACE) is not None
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert await h.client.get_or_none(Secret, name, namespace=TOKEN_NAMESPACE) is None


@pytest.mark.slow
async def test_a_cache_that_stays_behind_fails_the_drain_step_which_is_retried(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        held_back = CATCH_UP_TIMEOUT + 30
        await hold_back_pods(emu, held_back, len(h.manager.cache.informers))
        emu.create(pinned_pod("late", "m-1"))
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        started = trio.current_time()
        failed = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert failed is not None
        assert "the pod cache has not caught up" in failed.status.last_operation.description
        assert "default/late" in failed.status.last_operation.description
        assert deletion_step(failed.status.last_operation.description) == INITIATE_DRAIN
        assert emu.extension(SimulatedCloud).vms  # nothing went on without the check
        await h.wait_gone("m-1")
        assert emu.get("v1", "Pod", "late", "default") is None
        assert held_back <= trio.current_time() - started <= held_back + 30


async def test_a_forced_drain_deletes_the_pods_the_api_lists_when_the_cache_stays_behind(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    async with drainer(emu) as (d, _):
        await d.cache.node_changes.wait_until(
            lambda: d.cache.nodes.get("", "n1") is not None, trio.current_time() + 60
        )
        await hold_back_pods(emu, CATCH_UP_TIMEOUT + 30, DRAIN_INFORMERS)
        emu.create(pinned_pod("late", "n1"))
        gentle = await d.drain("n1", DrainOptions())
        assert not gentle.succeeded and gentle.pods == []
        assert gentle.failure is not None and "default/late" in gentle.failure
        assert emu.get("v1", "Pod", "late", "default") is not None
        forced = await d.drain("n1", DrainOptions(force=True))
        assert forced.succeeded, forced.errors
        assert [r.pod for r in forced.pods] == ["default/late"]
        assert emu.get("v1", "Pod", "late", "default") is None
