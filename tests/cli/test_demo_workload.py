"""The embedded demo's scenario in-process on the MockClock: the real machine, MachineSet and
MachineDeployment controllers against the simulated cluster and cloud, the demo as their companion.
Every phase is observed — the deployment created, scaled up, rolled to the new class (a second
revision), updated in place to a third (the same machines in a third revision), one VM broken and
its machine Failed, preserved, then released and replaced, the workload with volumes and a budget
placed, the scale-down draining it onto the machines that stay — and nothing is left behind (no
node, VM or machine without its owner)."""

from __future__ import annotations

import io
import re

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node, PersistentVolumeClaim
from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.demo import seed
from kubetrio.cmd.demo.scenario import Demo, DemoFailed, DemoOptions
from kubetrio.cmd.embedded import install_crds
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cluster import ClusterSimulation
from tests.helpers.machines import machine_manager


def lines_with(output: str, key: str) -> list[dict[str, str]]:
    """The plain ``key=value`` lines that have ``key``, parsed (quoted values unquoted)."""
    parsed = []
    for line in output.splitlines():
        pairs = dict(
            (k, v.strip('"')) for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line)
        )
        if key in pairs and not line.startswith("summary"):
            parsed.append(pairs)
    return parsed


@pytest.mark.slow
async def test_demo_scenario_in_process(mock_clock: trio.testing.MockClock) -> None:
    async with serve_world(simulate=ClusterSimulation.realistic()) as emu:
        client = Client.from_url(emu.url, token=emu.token)
        await install_crds(client)
        out = io.StringIO()
        cloud = emu.extension(SimulatedCloud).url
        options = DemoOptions(machines=4, cloud_url=cloud)
        demo = Demo(client, options, kubeconfig=str(emu.kubeconfig_path), stream=out)
        async with machine_manager(emu, also=(machineset_setup, deployment_setup)) as h:
            with trio.fail_after(600):
                code = await demo.run(h.manager)
            output = out.getvalue()
            assert code == 0, output

            events = [line["demo"] for line in lines_with(output, "demo")]
            for milestone in (
                "deployment ready",
                "scaled up",
                "rolled out",
                "updated in place",
                "machine failed",
                "machine preserved",
                "machine replaced",
                "workloads running",
                "scale-down done",
                "finished",
            ):
                assert milestone in events, (milestone, output)
            assert events.index("rolled out") < events.index("machine failed")
            assert "demo=orphans nodes=0 vms=0" in output
            assert re.search(r'demo="updated in place" .* same_vms=4 new_machines=0$', output, re.M)

            # Three revisions: the first set emptied by the rolling update, the second by the
            # in-place update, the third holds the rest.
            sets = lines_with(output, "set")
            assert {(s["revision"], s["class"]) for s in sets if "revision" in s} == {
                ("1", seed.CLASS_NAME),
                ("2", seed.NEW_CLASS_NAME),
                ("3", seed.IN_PLACE_CLASS_NAME),
            }
            assert any(s["desired"] == "4" and s["ready"] == "4" for s in sets if "ready" in s)
            # The broken VM's machine: Unknown, then Failed after the 5 s health timeout.
            machines = [line for line in lines_with(output, "phase") if "machine" in line]
            phases: dict[str, list[str]] = {}
            for line in machines:
                phases.setdefault(line["machine"], []).append(line["phase"])
            failed = [name for name, seen in phases.items() if "Failed" in seen]
            assert len(failed) == 1, phases
            assert phases[failed[0]].index("Unknown") < phases[failed[0]].index("Failed")
            failure = next(p for p in demo.timeline.phases if p.name == "failure")
            assert 5.0 <= failure.figures["failed_after"] < 15.0, failure

            done = re.search(
                r'demo="scale-down done" took=\S+ remaining=2 pods_moved=(\d+) ', output
            )
            assert done is not None and int(done.group(1)) >= 2, output
            # 2 + 2 of the first class, 4 rolled in, 1 replacement: 9 machines, 7 gone.
            summary = [line for line in output.splitlines() if line.startswith("summary ")]
            assert summary[-1].startswith(
                "summary machines=9 running=9 updated_in_place=4 failed=1 deleted=7 "
            )
            outcomes = [line.rsplit("outcome=", 1)[1] for line in summary if "outcome=" in line]
            assert sorted(outcomes) == sorted(
                ["rolled"] * 4
                + ["failed_preserved_replaced", "scaled_down", "scaled_down", "kept", "kept"]
            )
            phases = ("create", "scale-up", "rolling-update", "in-place-update", "failure")
            for phase in (*phases, "workloads"):
                assert re.search(rf"^summary phase={phase} took=[\d.]+s", output, re.M), phase

            # The cluster as the API server has it: what the output claims is so.
            deployment = await client.get(
                MachineDeployment, seed.DEPLOYMENT, namespace=seed.NAMESPACE
            )
            assert deployment.status.available_replicas == deployment.spec.replicas == 2
            left = (await client.list(Machine, namespace=seed.NAMESPACE)).items
            assert len(left) == 2 and all(m.phase == PHASE_RUNNING for m in left)
            # The machines updated in place keep their spec (MCM moves them, not their spec);
            # the replacement of the failed one is of the new class.
            assert {m.spec.class_.name for m in left} <= {
                seed.NEW_CLASS_NAME,
                seed.IN_PLACE_CLASS_NAME,
            }
            owners = {m.metadata.controller_ref().name for m in left}  # type: ignore[union-attr]
            sets_now = (await client.list(MachineSet, namespace=seed.NAMESPACE)).items
            live_sets = {s.name for s in sets_now if s.spec.replicas > 0}
            assert owners == live_sets and len(live_sets) == 1
            nodes = {n.name for n in (await client.list(Node)).items if n.spec.provider_id}
            assert nodes == {m.status.node or m.name for m in left}
            vms = (await EmuClient(cloud).get("/v1/vms")).json()["items"]
            assert sorted(vm["providerID"] for vm in vms) == sorted(
                m.spec.provider_id for m in left
            )
            # The StatefulSet's pods kept their volumes through the drains.
            for pod in demo.view.running_pods(seed.STATEFULSET):
                assert pod.spec.node_name in nodes
                claim = await client.get(
                    PersistentVolumeClaim, f"data-{pod.name}", namespace="default"
                )
                assert claim.spec.volume_name, "the sim-csi provisioner bound the claim"


async def test_a_vm_without_its_machine_fails_the_demo(mock_clock: trio.testing.MockClock) -> None:
    """The orphan check the scenario ends with can fail: a VM at the simulated cloud whose
    machine does not exist is reported by its provider ID, and the demo's exit code says so."""
    async with serve_world(simulate=ClusterSimulation.realistic()) as emu:
        client = Client.from_url(emu.url, token=emu.token)
        await install_crds(client)
        body = {
            "machineClass": {"name": seed.CLASS_NAME, "namespace": "default", "providerSpec": {}},
            "machine": {"name": "nobody", "namespace": "default"},
        }
        cloud = emu.extension(SimulatedCloud).url
        created = (await EmuClient(cloud).request("POST", "/v1/create", body)).json()
        options = DemoOptions(machines=1, cloud_url=cloud)
        demo = Demo(client, options, kubeconfig="-", stream=io.StringIO())
        async with trio.open_nursery() as nursery:
            await nursery.start(demo.view.run)
            with pytest.raises(DemoFailed) as failed:
                await demo._check_orphans()
            assert created["providerID"] in str(failed.value)
            nursery.cancel_scope.cancel()
