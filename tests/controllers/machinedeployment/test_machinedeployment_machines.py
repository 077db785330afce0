"""MachineDeployments with real machines: the deployment, MachineSet and machine controllers
together on the emulator (MockClock); VMs boot at the simulated cloud and join the simulated
cluster, old ones are drained and deleted. Rolling update to a new class within its bounds,
and meltdown protection across a real deployment's sets."""

from __future__ import annotations

import itertools

import pytest
import trio
import trio.testing

from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING, Machine
from kubetrio.emulator import Emulator
from tests.helpers.deployments import PoolHarness, deployment_doc, pool_manager
from tests.helpers.machines import install_crds, seed_class

pytestmark = pytest.mark.slow

HEALTH_TIMEOUT = 200.0


def live(machines: list[Machine]) -> list[Machine]:
    return [m for m in machines if not m.deleting and m.phase != "Terminating"]


async def watch_machines(p: PoolHarness, seen: list[tuple[int, int, int]]) -> None:
    """Record (machines not being deleted, Running ones, Failed ones) at every change."""
    while True:
        machines = p.machines()
        point = (
            len(live(machines)),
            sum(1 for m in live(machines) if m.phase == PHASE_RUNNING),
            sum(1 for m in machines if m.phase == PHASE_FAILED),
        )
        if not seen or seen[-1] != point:
            seen.append(point)
        await p.h.ctx.machine_changes.next_change()


async def test_rolling_update_to_a_new_class_replaces_every_machine_within_bounds(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, "small", bootSeconds=60)
    seed_class(emu, "large", bootSeconds=60)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    async with pool_manager(emu) as p:
        d = p.deployments
        emu.create(deployment_doc(replicas=3, strategy=strategy))
        await d.wait_complete()
        assert sorted(m.phase for m in p.machines()) == [PHASE_RUNNING] * 3
        old_names = {m.name for m in p.machines()}
        seen: list[tuple[int, int, int]] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_machines, p, seen)
            started = trio.current_time()
            generation = await d.patch(
                {"spec": {"template": {"spec": {"class": {"name": "large"}}}}}
            )
            done = await d.wait_complete(generation=generation)
            took = trio.current_time() - started
            nursery.cancel_scope.cancel()
        assert max(total for total, _, _ in seen) <= 4, seen
        assert min(running for _, running, _ in seen) >= 3, seen
        machines = live(p.machines())
        assert len(machines) == 3 and not {m.name for m in machines} & old_names
        assert {m.spec.class_.name for m in machines} == {"large"}
        assert all(m.phase == PHASE_RUNNING for m in machines)
        assert done.status.updated_replicas == done.status.available_replicas == 3
        # One machine at a time, each a 60 s boot (and its join): three waves, not more.
        assert took < 3 * 60 + 90, took


async def test_meltdown_protection_holds_on_a_real_deployment(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Every node goes NotReady 100 s after it joins; the health timeout passes for all three
    at once, yet at no moment is more than one of the deployment's machines Failed while its
    replacement comes up. (A 200 s health timeout rather than MCM's 10 min: the property is
    about order, and every simulated minute costs real time in clock jumps.)"""
    install_crds(emu)
    seed_class(emu, conditionAfter=[{"type": "Ready", "status": "False", "afterSeconds": 100}])
    async with pool_manager(emu, health_timeout=HEALTH_TIMEOUT) as p:
        emu.create(deployment_doc(replicas=3))
        seen: list[tuple[int, int, int]] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_machines, p, seen)
            await p.h.ctx.machine_changes.wait_until(
                lambda: sum(1 for m in p.machines() if m.phase == PHASE_FAILED) >= 1,
                trio.current_time() + 3600,
            )
            # The deployment's status lists what its sets report failed.
            deployment = await p.deployments.wait_deployment(
                lambda d: d is not None and bool(d.status.failed_machines)
            )
            assert deployment is not None
            [summary] = deployment.status.failed_machines
            assert summary.last_operation.state == "Failed"
            assert summary.name.startswith("pool-")
            await trio.sleep(3 * HEALTH_TIMEOUT)  # replacements fail and are replaced in turn
            nursery.cancel_scope.cancel()
        assert max(failed for _, _, failed in seen) == 1, seen
        # Failed machines were replaced one after another: a machine became Failed again after
        # an earlier one had gone (6 times in 600 s here; this used to count the machines left,
        # which were 3 whether or not any was replaced).
        failures = sum(1 for before, after in itertools.pairwise(seen) if after[2] > before[2])
        assert failures >= 2, seen


async def test_a_set_without_the_hash_label_is_adopted_and_labelled_without_a_roll(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A set an older MCM (or a person) made without ``machine-template-hash`` in its selector
    is adopted by a deployment of the same template; the label goes onto its template, then
    its machines, then its labels and selector (MCM's addHashKeyToISAndMachines), and the
    same machines keep running: no new set, no roll."""
    install_crds(emu)
    seed_class(emu, "small", bootSeconds=30)
    template = deployment_doc(replicas=2)["spec"]["template"]
    async with pool_manager(emu) as p:
        d = p.deployments
        emu.create(
            {
                "apiVersion": "machine.sapcloud.io/v1alpha1",
                "kind": "MachineSet",
                "metadata": {"name": "legacy", "namespace": "default", "labels": {"name": "pool"}},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"name": "pool"}},
                    "template": template,
                },
            }
        )
        await p.h.wait_machine(
            "",
            lambda _: sum(1 for m in p.machines() if m.phase == PHASE_RUNNING) == 2,
        )
        before = {m.name for m in p.machines()}
        emu.create(deployment_doc(replicas=2))
        done = await d.wait_complete()
        assert done.status.updated_replicas == 2

        def labelled() -> bool:
            legacy = d.sets.get("default", "legacy")
            if legacy is None or legacy.spec.selector is None:
                return False
            value = legacy.spec.selector.match_labels.get("machine-template-hash")
            return (
                value is not None
                and legacy.metadata.labels.get("machine-template-hash") == value
                and legacy.spec.template.metadata.labels.get("machine-template-hash") == value
                and all(
                    m.metadata.labels.get("machine-template-hash") == value for m in p.machines()
                )
            )

        assert await d.set_changes.wait_until(labelled, trio.current_time() + 600)
        assert [s.name for s in d.sets_of()] == ["legacy"]
        assert {m.name for m in p.machines()} == before
        assert all(m.phase == PHASE_RUNNING for m in p.machines())
