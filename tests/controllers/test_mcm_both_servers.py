"""Gardener MCM's controllers end to end on the emulator and on a real kube-apiserver: a manager
with the machine, MachineSet, MachineDeployment and safety controllers, the ``sim`` driver
calling a simulated cloud whose VMs register Nodes that the simulated kubelets keep Ready, and
pods scheduled, evicted and replaced by the simulated workload controllers (a bare control plane
runs none of its own). Every write goes through the API; every wait wakes on informer events,
on the mock clock (the kit holds it while a request is in flight).
"""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.machine import PHASE_FAILED, PHASE_UNKNOWN, Machine
from kubetrio.api.machineset import MachineDeployment
from kubetrio.runtime.util.duration import Duration
from kubetrio.testing.servers import ApiServer
from tests.helpers.machines import MACHINE_API, machine_doc
from tests.helpers.machinesets import machine_set_doc
from tests.helpers.mcm_world import app_pods_on, mcm_on, ready, running, running_machines
from tests.helpers.simcluster import pdb, replicaset


async def test_a_machine_boots_registers_its_node_and_runs(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        name = c.name("m-1")
        await c.post(machine_doc(name))
        await c.until(lambda: running(c.machine(name)) and ready(c.node(name)))
        machine = c.machine(name)
        node = c.node(name)
        assert machine is not None and node is not None
        assert machine.status.node == name
        assert node.spec.provider_id == machine.spec.provider_id
        assert [vm.provider_id for vm in c.world.cloud.vms.values()] == [machine.spec.provider_id]
        assert machine.status.last_operation.description.startswith(
            f"Machine {name} successfully joined the cluster in "
        )


async def test_a_broken_vm_goes_unknown_then_failed_and_is_replaced(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server, health_timeout=Duration(60)) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 2))
        await c.until(lambda: len(running_machines(c, set=name)) == 2)
        broken = running_machines(c, set=name)[0]
        c.world.cloud.fail(broken.spec.provider_id)
        seen: list[str] = []

        def replaced() -> bool:
            m = c.machine(broken.metadata.name)
            if m is not None and (not seen or seen[-1] != m.phase):
                seen.append(m.phase)
            return m is None and len(running_machines(c, set=name)) == 2

        await c.until(replaced)
        assert PHASE_UNKNOWN in seen and PHASE_FAILED in seen, seen
        assert seen.index(PHASE_UNKNOWN) < seen.index(PHASE_FAILED), seen
        assert broken.spec.provider_id not in c.world.cloud.vms
        assert c.node(broken.metadata.name) is None
        assert len(c.world.cloud.vms) == 2


async def test_deleting_a_machine_drains_it_within_the_budget(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        gone, stays = c.name("a"), c.name("b")
        for name in (gone, stays):
            await c.post(machine_doc(name))
        both = (gone, stays)
        await c.until(lambda: all(running(c.machine(n)) and ready(c.node(n)) for n in both))
        await c.post(replicaset("web", 4))
        await c.post(pdb("web", "web", maxUnavailable=1))
        await c.until(lambda: sum(map(len, app_pods_on(c, "web").values())) == 4)
        assert app_pods_on(c, "web").get(gone), "the scheduler spreads the pods"
        vm = c.machine(gone)
        assert vm is not None
        fewest = [4]

        def drained() -> bool:
            fewest[0] = min(fewest[0], sum(map(len, app_pods_on(c, "web").values())))
            return c.machine(gone) is None and len(app_pods_on(c, "web").get(stays, [])) == 4

        await c.client.delete(Machine, gone, namespace=c.ns)
        await c.until(drained)
        assert fewest[0] >= 3, "the budget allows one web pod down at a time"
        assert c.node(gone) is None
        assert vm.spec.provider_id not in c.world.cloud.vms
        assert running(c.machine(stays))


async def test_a_deployment_scales_and_rolls_to_a_new_class(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        pool = await c.pool(1)
        await c.until(lambda: len(running_machines(c, name=pool)) == 1)

        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": {"replicas": 3}})
        await c.until(lambda: len(running_machines(c, name=pool)) == 3)
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": {"replicas": 2}})
        await c.until(lambda: len(c.machines()) == 2 and len(running_machines(c, name=pool)) == 2)
        assert len(c.world.cloud.vms) == 2

        old = {m.metadata.name for m in c.machines()}
        new_class = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "large"}}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": new_class})
        most = [0]

        def rolled() -> bool:
            most[0] = max(most[0], len(c.machines()))
            machines = running_machines(c, name=pool)
            return (
                len(c.machines()) == 2
                and len(machines) == 2
                and all(m.spec.class_.name == "large" for m in machines)
                and len(c.machine_sets()) >= 1
            )

        await c.until(rolled)
        assert old.isdisjoint(m.metadata.name for m in c.machines())
        assert most[0] <= 3, "maxSurge 1"
        deployment = await c.client.get(MachineDeployment, pool, namespace=c.ns)
        assert deployment.status.updated_replicas == 2
