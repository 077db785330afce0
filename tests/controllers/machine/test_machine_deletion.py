"""The deletion flow end to end: every step in order, VM-not-found, provider errors per step,
drains blocked by a budget and how they end (drain timeout, force-deletion label, a node
unhealthy for five minutes), VolumeAttachments, the node's Terminating condition, a missing
finalizer, and a manager killed mid-deletion whose successor finishes the job."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_FAILED, PHASE_TERMINATING
from kubetrio.api.storage import VolumeAttachment
from kubetrio.controllers.machine.status import (
    FINALIZER,
    INITIATE_DRAIN,
    INITIATE_VM_DELETION,
    deletion_step,
)
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cloud.script import Failure
from kubetrio.sim.cluster import ClusterSimulation
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    event_messages,
    event_reasons,
    install_crds,
    machine_doc,
    machine_manager,
    running_machine,
    seed_class,
)
from tests.helpers.simcluster import pdb, replicaset, statefulset

FAST = ClusterSimulation(
    pod_start_delay=0.05, grace_factor=0.01, attach_delay=0.2, detach_delay=0.2
)
CLASS = "default/small"


@pytest.fixture
async def cluster() -> AsyncIterator[Emulator]:
    """An emulator with the simulated cluster (kubelets, scheduler, workloads, CSI)."""
    async with serve_world(simulate=FAST) as e:
        install_crds(e)
        yield e


def delete_machine(emu: Emulator, name: str = "m-1") -> None:
    emu.delete(MACHINE_API, "Machine", name, "default")


@pytest.mark.slow
async def test_every_step_runs_in_order_and_everything_goes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        delete_machine(emu)
        await h.wait_gone("m-1")
        assert trio.current_time() < 60  # no 5 s pauses between steps
        assert await event_reasons(h, "m-1") == [
            "Created",
            "Joined",
            "Terminating",
            "Drained",
            "VMDeleted",
            "NodeDeleted",
        ]
        assert await h.client.get_or_none(Node, "m-1") is None
        assert emu.extension(SimulatedCloud).vms == {}


@pytest.mark.slow
async def test_vm_already_gone_at_the_provider(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        machine, machine_class = h.machine("m-1"), h.ctx.classes.get("default", "small")
        assert machine is not None and machine_class is not None
        await h.ctx.drivers.get("sim").delete_machine(machine, machine_class, {})
        delete_machine(emu)
        await h.wait_gone("m-1")
        messages = await event_messages(h, "m-1")
        assert "VM not found. Continuing deletion flow." in messages
        assert await h.client.get_or_none(Node, "m-1") is None


@pytest.mark.parametrize(
    ("op", "code", "step", "retry"),
    [
        ("delete", "DeadlineExceeded", INITIATE_VM_DELETION, 5),
        ("delete", "Internal", INITIATE_VM_DELETION, 600),
    ],
)
async def test_provider_errors_hold_the_step_and_retry(
    emu: Emulator, mock_clock: trio.testing.MockClock, op: str, code: str, step: str, retry: float
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        emu.extension(SimulatedCloud).script(CLASS, op, Failure(code=code, count=1))
        delete_machine(emu)
        held = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert held is not None
        started = trio.current_time()
        assert held.phase == PHASE_TERMINATING
        assert deletion_step(held.status.last_operation.description) == step
        assert held.status.last_operation.error_code == code
        await h.wait_gone("m-1")
        assert retry - 1.5 <= trio.current_time() - started <= retry + 1


@pytest.mark.slow
async def test_drain_blocked_by_a_budget_is_forced_after_the_drain_timeout(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    seed_class(cluster)
    async with machine_manager(cluster) as h:
        await running_machine(cluster, h, machineConfiguration={"drainTimeout": "2m"})
        blocking_budget(cluster)
        await h.wait_pods(lambda: _web_pods_running(h) == 1)
        reasons: list[str] = []
        h.manager.cache.informer(Node).add_handler(
            EventHandler(on_update=lambda _o, n: _terminating_reason(n, reasons))
        )
        started = trio.current_time()
        delete_machine(cluster)
        failed = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert failed is not None
        assert failed.status.last_operation.description.startswith("Drain failed due to - ")
        assert deletion_step(failed.status.last_operation.description) == INITIATE_DRAIN
        assert 119 <= trio.current_time() - started <= 122  # the drain's own deadline
        await h.wait_gone("m-1")
        assert trio.current_time() - started <= 130  # then forced at once
        assert "ScaleDown" in reasons
        assert "Drain failed due to" in await event_messages(h, "m-1")


def blocking_budget(emu: Emulator) -> None:
    """A budget that blocks eviction without being misconfigured (MCM fails a drain at once on
    a budget that can never allow one): one healthy "web" pod, one that cannot be scheduled,
    and at least one of the two must stay."""
    emu.create(replicaset("web", 1))
    stuck = replicaset("web-stuck", 1, app="web")
    stuck["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "nowhere"}
    emu.create(stuck)
    emu.create(pdb("web-budget", "web", minAvailable=1))


def _web_pods_running(h: Harness) -> int:
    return sum(
        1
        for p in h.ctx.drainer.cache.pods.list()
        if p.metadata.labels.get("app") == "web" and p.spec.node_name and not p.deleting
    )


def _terminating_reason(node: Node, reasons: list[str]) -> None:
    condition = node.condition("Terminating")
    if condition is not None and condition.reason not in reasons:
        reasons.append(condition.reason)


async def machine_behind_a_budget(cluster: Emulator, h: Harness) -> None:
    """m-1 Running, holding a pod whose budget blocks its eviction."""
    await running_machine(cluster, h)
    blocking_budget(cluster)
    await h.wait_pods(lambda: _web_pods_running(h) == 1)


async def deleted_by_force_at_once(cluster: Emulator, h: Harness) -> None:
    started = trio.current_time()
    delete_machine(cluster)
    await h.wait_gone("m-1")
    assert trio.current_time() - started < 5
    assert "Force Drain successful" in await event_messages(h, "m-1")


@pytest.mark.slow
async def test_force_deletion_label_skips_the_budget(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    seed_class(cluster)
    async with machine_manager(cluster) as h:
        await machine_behind_a_budget(cluster, h)
        machine = cluster.get(MACHINE_API, "Machine", "m-1", "default")
        assert machine is not None
        machine["metadata"]["labels"]["force-deletion"] = "true"
        cluster.update(machine)
        await deleted_by_force_at_once(cluster, h)


@pytest.mark.slow
async def test_node_unhealthy_for_five_minutes_is_drained_by_force(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    seed_class(cluster, conditionAfter=[{"type": "Ready", "status": "False", "afterSeconds": 30}])
    async with machine_manager(cluster) as h:
        await machine_behind_a_budget(cluster, h)
        await trio.sleep(400 - trio.current_time())  # NotReady since t=30: over five minutes
        await deleted_by_force_at_once(cluster, h)


@pytest.mark.slow
async def test_failed_machine_marks_its_node_unhealthy_and_attachments_are_deleted(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    seed_class(cluster, conditionAfter=[{"type": "Ready", "status": "False", "afterSeconds": 30}])
    async with machine_manager(cluster) as h:
        await running_machine(cluster, h)
        cluster.create(statefulset("db", 1))
        await h.wait_node("m-1", lambda n: n is not None and len(n.status.volumes_attached) == 1)
        await h.wait_phase("m-1", PHASE_FAILED)
        reasons: list[str] = []
        h.manager.cache.informer(Node).add_handler(
            EventHandler(on_update=lambda _o, n: _terminating_reason(n, reasons))
        )
        deleted: list[str] = []
        h.manager.cache.informer(VolumeAttachment).add_handler(
            EventHandler(
                on_delete=lambda a: deleted.append(
                    a.spec.node_name if isinstance(a, VolumeAttachment) else "?"
                )
            )
        )
        delete_machine(cluster)
        await h.wait_gone("m-1")
        assert reasons == ["Unhealthy"]
        assert deleted == ["m-1"]  # the controller deleted the dead node's attachment
        assert "Force Drain successful. Delete Volume Attachments" in await event_messages(h, "m-1")


@pytest.mark.slow
async def test_deleting_machine_without_our_finalizer_is_left_alone(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    held = machine_doc("m-1")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    emu.create(held)
    delete_machine(emu)
    async with machine_manager(emu) as h:
        await trio.sleep(700)  # past LongRetry: a second look changes nothing either
        machine = h.machine("m-1")
        assert machine is not None and machine.deleting
        assert machine.phase == "" and FINALIZER not in machine.metadata.finalizers
        assert emu.extension(SimulatedCloud).vms == {}


@pytest.mark.slow
async def test_a_new_manager_finishes_a_deletion_its_predecessor_was_killed_in(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    seed_class(cluster)
    with trio.CancelScope() as killed:
        async with machine_manager(cluster) as h:
            await running_machine(cluster, h)
            await running_machine(cluster, h, "m-2")
            blocking_budget(cluster)
            await h.wait_pods(lambda: _web_pods_running(h) == 1)
            web_node = next(
                p.spec.node_name
                for p in h.ctx.drainer.cache.pods.list()
                if p.metadata.labels.get("app") == "web" and p.spec.node_name  # not web-stuck
            )
            other = "m-2" if web_node == "m-1" else "m-1"
            # One machine stops in the drain (the budget), the other in VM deletion.
            cluster.extension(SimulatedCloud).script(
                CLASS, "delete", Failure(code="Internal", count=1)
            )
            delete_machine(cluster, other)
            await h.wait_machine(
                other, lambda m: m is not None and m.status.last_operation.state == "Failed"
            )
            delete_machine(cluster, web_node)
            await h.wait_machine(
                web_node,
                lambda m: (
                    m is not None
                    and deletion_step(m.status.last_operation.description) == INITIATE_DRAIN
                    and m.phase == PHASE_TERMINATING
                ),
            )
            killed.cancel()  # no graceful stop: the process is gone
    first = cluster.get(MACHINE_API, "Machine", other, "default")
    assert (
        first is not None
        and deletion_step(first["status"]["lastOperation"]["description"]) == INITIATE_VM_DELETION
    )
    cluster.delete("policy/v1", "PodDisruptionBudget", "web-budget", "default")
    async with machine_manager(cluster) as h2:
        await h2.wait_gone(web_node)
        await h2.wait_gone(other)
        assert cluster.extension(SimulatedCloud).vms == {}


@pytest.mark.slow
async def test_a_blocked_gentle_drain_gives_way_when_it_should_be_forced(
    cluster: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Not held until the 2 h drain timeout: the label set mid-drain, or the node's fifth
    minute of NotReady during it, forces the drain then."""
    seed_class(cluster)
    seed_class(
        cluster,
        "sick",
        conditionAfter=[{"type": "Ready", "status": "False", "afterSeconds": 60}],
    )
    async with machine_manager(cluster) as h:
        await machine_behind_a_budget(cluster, h)
        delete_machine(cluster)
        await trio.sleep(60)
        assert h.machine("m-1") is not None  # the budget holds the gentle drain
        machine = cluster.get(MACHINE_API, "Machine", "m-1", "default")
        assert machine is not None
        machine["metadata"]["labels"]["force-deletion"] = "true"
        labelled = trio.current_time()
        cluster.update(machine)
        await h.wait_gone("m-1")
        assert trio.current_time() - labelled < 5

        cluster.delete("policy/v1", "PodDisruptionBudget", "web-budget", "default")
        await running_machine(
            cluster, h, "m-2", **{"class": {"kind": "MachineClass", "name": "sick"}}
        )
        cluster.create(pdb("web-budget-2", "web", minAvailable=1))
        await h.wait_pods(lambda: _web_pods_running(h) == 1)
        booted = trio.current_time()
        delete_machine(cluster, "m-2")  # NotReady from booted + 60 s: force at + 360 s
        await h.wait_gone("m-2")
        assert 355 <= trio.current_time() - booted <= 370
