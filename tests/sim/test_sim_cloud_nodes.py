"""The simulated cloud's VMs and the Nodes their kubelets register, as a real cloud behaves: a
Node is one VM's (its providerID), a second VM with the same hostname cannot register over it
and keeps trying until that Node is gone, and a VM reflects its class's ``nodeTemplate``."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver.sim import SimDriver
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.cloud import SimulatedCloud

NO_SECRET: dict[str, bytes] = {}


def machine_class(name: str = "small", template: Any = None, **spec: Any) -> MachineClass:
    doc: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "provider": "sim",
        "providerSpec": {"region": "eu-1", **spec},
    }
    if template is not None:
        doc["nodeTemplate"] = template
    return msgspec.convert(doc, MachineClass)


def machine(name: str, provider_id: str = "") -> Machine:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"class": {"kind": "MachineClass", "name": "small"}, "providerID": provider_id},
        },
        Machine,
    )


async def test_a_second_vm_cannot_take_over_a_node_of_another_vm(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = Client.from_url(emu.url, token=emu.token)
    driver = SimDriver(emu.extension(SimulatedCloud).url)
    cls = machine_class(nodeName="shared")
    first = await driver.create_machine(machine("m-1"), cls, NO_SECRET)
    await trio.sleep(1)
    node = await client.get(Node, "shared")
    assert node.spec.provider_id == first.provider_id
    # The first VM goes, its Node stays (the machine controller deletes it, not the cloud).
    await driver.delete_machine(machine("m-1", first.provider_id), cls, NO_SECRET)
    second = await driver.create_machine(machine("m-2"), cls, NO_SECRET)
    assert second.node_name == "shared" and second.provider_id != first.provider_id
    await trio.sleep(120)
    node = await client.get(Node, "shared")
    assert node.spec.provider_id == first.provider_id  # never taken over
    ready = node.condition("Ready")
    assert ready is not None and ready.status == "Unknown"  # nor revived by the new kubelet
    vms = (await EmuClient(emu.extension(SimulatedCloud).url).get("/v1/vms")).json()["items"]
    assert [(vm["machineName"], vm["registered"]) for vm in vms] == [("m-2", False)]
    # The old Node gone, the new VM's kubelet registers on its next try.
    await client.delete(Node, "shared")
    await trio.sleep(11)
    node = await client.get(Node, "shared")
    assert node.spec.provider_id == second.provider_id
    ready = node.condition("Ready")
    assert ready is not None and ready.status == "True"


async def test_a_node_without_provider_id_is_adopted_at_registration(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A Node made before any VM (by hand, or by a kubelet whose cloud had not set the ID yet)
    is the one a kubelet of that hostname registers into, as kubelets do."""
    client = Client.from_url(emu.url, token=emu.token)
    emu.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pre"}})
    driver = SimDriver(emu.extension(SimulatedCloud).url)
    created = await driver.create_machine(machine("m-1"), machine_class(nodeName="pre"), NO_SECRET)
    await trio.sleep(1)
    assert (await client.get(Node, "pre")).spec.provider_id == created.provider_id
