"""What a manager keeps about machines that are gone: nothing that grows without bound.

A manager that rolls thousands of machines a day must not keep per-machine state once the
Machine, its Node, VM and token are deleted. After a few lifecycles this checks, in what
/metrics serves (the registry it renders) and in the controller's own bookkeeping, that nothing
names a gone machine except what is bounded by design: the event correlator's LRUs
(client-go's 4096 entries each) and a ``requeue_after`` still parked in the work queue, which
fires within MCM's LongRetry and then finds nothing to do.

Why these are the only exceptions: ``tests/bench/machines.py`` run over many waves on one
manager showed the memory each lifecycle leaves behind is the event correlator's LRUs filling
(the aggregator's and the sender's take 8 entries per lifecycle, the spam filter's 2), and that
it levels off once they are full; ``docs/performance.md`` has the figures.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client import generate_latest

from kubetrio.api.machine import PHASE_RUNNING
from kubetrio.api.machineset import MachineDeployment
from kubetrio.controllers.machine.retry import LongRetry
from kubetrio.emulator import Emulator
from kubetrio.emulator.faults import FaultRule
from kubetrio.runtime.controller.controller import Controller
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.testing import eventually
from tests.helpers.deployments import deployment_doc, deployment_manager
from tests.helpers.machines import (
    MACHINE_API,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)

MACHINES = 6
BAD_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}


@pytest.mark.slow
async def test_nothing_unbounded_names_a_machine_once_it_is_gone(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=0)
    names = [f"gone-{i}" for i in range(MACHINES)]
    async with machine_manager(emu) as h:
        for name in names:
            emu.create(machine_doc(name))
        for name in names:
            await h.wait_phase(name, PHASE_RUNNING)
        running = generate_latest(h.manager.registry).decode()
        assert all(f'name="{name}"' in running for name in names)  # the check below can fail

        # Every deletion's first status write fails once: each machine then has backoff state
        # in the queue's rate limiter, which its successful reconcile must forget.
        emu.faults.add(
            FaultRule(
                verb="patch", resource="machines", subresource="status", status=500, count=MACHINES
            )
        )
        for name in names:
            emu.delete(MACHINE_API, "Machine", name, "default")
        for name in names:
            await h.wait_gone(name)
            await h.wait_node(name, lambda node: node is None)
        controllers = [r for r in h.manager.runnables if isinstance(r, Controller)]
        queue = next(c for c in controllers if c.name == "machine").queue
        keys = [ObjectKey("default", name) for name in names]

        def forgotten() -> bool:
            return all(queue.num_requeues(key) == 0 for key in keys)

        await eventually(forgotten, on=h.manager)
        gone_at = trio.current_time()

        scraped = generate_latest(h.manager.registry).decode()
        assert [line for line in scraped.splitlines() if "gone-" in line] == []
        # A requeue_after still parked is due within LongRetry: bounded by time, not by count.
        parked = [entry for entry in queue._parked if entry[2] in keys]
        assert all(entry[0] <= gone_at + LongRetry for entry in parked)


async def test_a_gone_deployment_leaves_no_report_behind(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The once-per-generation InvalidSpec report is kept per deployment; a deployment deleted
    (or whose spec was fixed) must not keep its entry for the manager's lifetime."""
    install_crds(emu)
    names = [f"bad-{i}" for i in range(3)]
    async with deployment_manager(emu) as h:
        for name in [*names, "fixed-later"]:
            emu.create(deployment_doc(name, replicas=0, strategy=BAD_STRATEGY))
        # The queue is FIFO: once a deployment created after them completes, they were seen.
        emu.create(deployment_doc("good-1", replicas=0))
        await h.wait_complete("good-1")
        assert len(h.reconciler._reported) == len(names) + 1  # the check below can fail
        fix = {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}
        await h.client.patch(
            MachineDeployment, "fixed-later", fix, namespace="default", patch_type="merge"
        )
        for name in names:
            emu.delete(MACHINE_API, "MachineDeployment", name, "default")
        for name in names:
            await h.wait_deployment(lambda d: d is None, name)
        emu.create(deployment_doc("good-2", replicas=0))
        await h.wait_complete("good-2")
        assert h.reconciler._reported == {}
