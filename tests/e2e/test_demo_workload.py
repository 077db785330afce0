"""The embedded demo's objects against the simulated cluster, with the test standing in for the
machine controller (VMs created through the ``sim`` driver): the CRDs install, the class and
machines are accepted, the sim VMs' nodes join, and the workload — StatefulSet pods with
``sim-csi`` volumes, web pods, a budget that allows evictions — lands spread over the machines,
which is what the demo's scale-down then drains."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import PersistentVolumeClaim
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.policy import PodDisruptionBudget
from kubetrio.cmd import demo_seed as seed
from kubetrio.cmd.demo import Demo, DemoOptions
from kubetrio.cmd.embedded import install_crds
from kubetrio.controllers.machine.driver.sim import SimDriver
from kubetrio.runtime.client import Client
from kubetrio.runtime.emulator import serve_emulator
from kubetrio.runtime.emulator.cluster import ClusterSimulation


async def test_demo_workload_spreads_over_sim_machines(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_emulator(simulate=ClusterSimulation.realistic()) as emu:
        client = Client.from_url(emu.url, token=emu.token)
        await install_crds(client)
        await install_crds(client)  # a second start on kept state: no error
        await seed.seed_machines(client, 2)
        await seed.seed_machines(client, 2)  # nor here
        demo = Demo(client, DemoOptions(machines=2), kubeconfig=str(emu.kubeconfig_path))
        async with trio.open_nursery() as nursery:
            await nursery.start(demo.view.run)
            assert sorted(m.name for m in demo.view.machine_list()) == ["demo-1", "demo-2"]

            # The machine controller's part, reduced to creating the VMs.
            driver = SimDriver(client)
            machine_class = await client.get(MachineClass, seed.CLASS_NAME, seed.NAMESPACE)
            for name in demo.names:
                machine = await client.get(Machine, name, seed.NAMESPACE)
                await driver.create_machine(machine, machine_class, {})

            def ready(name: str) -> bool:
                node = demo.view.node_map().get(name)
                condition = node.condition("Ready") if node is not None else None
                return condition is not None and condition.status == "True"

            with trio.fail_after(30):
                await demo.until(lambda: all(ready(n) for n in demo.names))
            await seed.seed_workloads(client, 2)
            await seed.seed_workloads(client, 2)
            with trio.fail_after(60):
                await demo.until(demo._workloads_placed)

            db = demo.view.running_pods(seed.STATEFULSET)
            assert sorted(p.spec.node_name for p in db) == ["demo-1", "demo-2"]
            for pod in db:
                claim = await client.get(PersistentVolumeClaim, f"data-{pod.name}", "default")
                assert claim.spec.volume_name, "the sim-csi provisioner bound the claim"
            budget = await client.get(PodDisruptionBudget, seed.PDB_NAME, seed.NAMESPACE)
            with trio.fail_after(30):
                while budget.status.disruptions_allowed < 1:
                    await trio.sleep(0.5)
                    budget = await client.get(PodDisruptionBudget, seed.PDB_NAME, "default")
            nursery.cancel_scope.cancel()
