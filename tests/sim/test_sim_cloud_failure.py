"""A VM that breaks at the simulated cloud (``POST <cloud>/v1/fail``), end to end with the machine,
MachineSet and MachineDeployment controllers (MockClock): its kubelet stops, so its Node's Ready
turns Unknown; the machine goes Unknown, then Failed once the health timeout of its template's
``machineConfiguration`` has passed, and its MachineSet replaces it — the demo's failure phase."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING, PHASE_UNKNOWN
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.deployments import deployment_doc, pool_manager
from tests.helpers.machines import install_crds, seed_class

HEALTH_TIMEOUT = 30.0


def ready_status(node: Node | None) -> str:
    condition = node.condition("Ready") if node is not None else None
    return condition.status if condition is not None else ""


def cloud(emu: Emulator) -> EmuClient:
    return EmuClient(emu.extension(SimulatedCloud).url)


async def fail_vm(emu: Emulator, provider_id: str) -> dict[str, object]:
    reply = await cloud(emu).request("POST", "/v1/fail", {"providerID": provider_id})
    assert reply.status == 200, reply.body
    decoded: dict[str, object] = reply.json()
    return decoded


@pytest.mark.slow
async def test_a_failed_vm_is_marked_failed_and_replaced(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=5)
    doc = deployment_doc(replicas=2)
    doc["spec"]["template"]["spec"]["machineConfiguration"] = {"healthTimeout": "30s"}
    async with pool_manager(emu) as p:
        emu.create(doc)
        await p.deployments.wait_complete()
        victim = sorted(p.machines(), key=lambda m: m.name)[0]
        node_name = victim.status.node or victim.name
        broke_at = trio.current_time()
        vm = await fail_vm(emu, victim.spec.provider_id)
        assert vm["failed"] is True and vm["providerID"] == victim.spec.provider_id

        await p.h.wait_node(node_name, lambda n: ready_status(n) == "Unknown")
        await p.h.wait_phase(victim.name, PHASE_UNKNOWN)
        await p.h.wait_phase(victim.name, PHASE_FAILED)
        # Not before the template's health timeout (the default is ten minutes).
        failed_after = trio.current_time() - broke_at
        assert HEALTH_TIMEOUT <= failed_after < HEALTH_TIMEOUT + 10, failed_after

        await p.h.wait_gone(victim.name)
        await p.h.wait_node(node_name, lambda n: n is None)
        await p.deployments.wait_complete()
        machines = p.machines()
        assert len(machines) == 2 and victim.name not in {m.name for m in machines}
        assert all(m.phase == PHASE_RUNNING for m in machines)
        vms = (await cloud(emu).get("/v1/vms")).json()["items"]
        assert victim.spec.provider_id not in {vm["providerID"] for vm in vms}
        assert not any(vm["failed"] for vm in vms)


async def test_fail_names_the_vm(emu: Emulator) -> None:
    for body, status, field in (
        ({}, 400, "providerID"),
        ({"providerID": 7}, 400, "providerID"),
        ({"providerID": "sim://sim-1/vm-99999"}, 404, "sim://sim-1/vm-99999"),
    ):
        reply = await cloud(emu).request("POST", "/v1/fail", body)
        assert reply.status == status, body
        assert field in reply.json()["message"], reply.json()
