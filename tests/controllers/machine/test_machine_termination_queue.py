"""The termination queue: a deletion goes ahead while every main-queue worker is stuck in a
slow provider call, a manager started on machines already being deleted finds them on the
termination queue, and a deletion that arrives during a machine's create call waits for the
call instead of orphaning the VM it brings back."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.machine import PHASE_PENDING, PHASE_RUNNING
from kubetrio.emulator import Emulator
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.machines import (
    MACHINE_API,
    install_crds,
    machine_doc,
    machine_manager,
    running_machine,
    seed_class,
)

# The provider's create call for the "slow" class takes this long (within the driver's
# request timeout, so it answers rather than failing).
SLOW_CREATE = 20.0
BACKLOG = 10  # slow machines queued behind one main worker: over three minutes of work


def delete_machine(emu: Emulator, name: str) -> None:
    emu.delete(MACHINE_API, "Machine", name, "default")


async def test_deletion_proceeds_while_the_main_queue_is_blocked(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    seed_class(emu, "slow", createSeconds=SLOW_CREATE)
    async with machine_manager(emu, workers=1) as h:
        await running_machine(emu, h, "m-1")
        slow = [f"m-slow-{i}" for i in range(BACKLOG)]
        for name in slow:
            emu.create(machine_doc(name, machine_class="slow"))
        # The one main worker is now inside the first slow create call, the rest queued.
        await h.wait_machine(slow[0], lambda m: m is not None and bool(m.metadata.finalizers))
        started = trio.current_time()
        delete_machine(emu, "m-1")
        await h.wait_gone("m-1")
        assert trio.current_time() - started < 2 * SLOW_CREATE
        waiting = [name for name in slow if not (m := h.machine(name)) or not m.spec.provider_id]
        assert len(waiting) >= BACKLOG - 2, "the main queue was not kept busy"
        registry = h.manager.registry
        for queue in ("machine", "machinetermination"):
            assert registry.get_sample_value(
                "workqueue_adds_total", {"name": queue, "controller": queue}
            ), queue
        # The slow machine is created in its own time, on the main queue.
        for name in slow:
            await h.wait_phase(name, PHASE_RUNNING, within=4 * BACKLOG * SLOW_CREATE)


async def test_machines_already_deleting_are_found_on_the_termination_queue(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    seed_class(emu, "slow", createSeconds=SLOW_CREATE)
    async with machine_manager(emu) as h:
        await running_machine(emu, h, "m-1")
        m1 = h.machine("m-1")
        assert m1 is not None
        vm = m1.spec.provider_id
    # No manager runs: the deletion only sets the timestamp (the finalizer holds it).
    delete_machine(emu, "m-1")
    emu.create(machine_doc("m-slow", machine_class="slow"))
    async with machine_manager(emu, workers=1) as h:
        await h.wait_gone("m-1", within=60)
        assert vm not in emu.extension(SimulatedCloud).vms


async def test_a_deletion_during_the_create_call_waits_and_leaves_no_vm(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, "slow", createSeconds=SLOW_CREATE)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-slow", machine_class="slow"))
        await h.wait_machine("m-slow", lambda m: m is not None and bool(m.metadata.finalizers))
        delete_machine(emu, "m-slow")
        await h.wait_machine("m-slow", lambda m: m is not None and m.deleting)
        await trio.sleep(SLOW_CREATE / 2)
        # Still in the create call: the deletion has not begun.
        slow = h.machine("m-slow")
        assert slow is not None and slow.phase in ("", PHASE_PENDING)
        await h.wait_gone("m-slow", within=4 * SLOW_CREATE)
        assert emu.extension(SimulatedCloud).vms == {}
