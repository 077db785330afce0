"""The simulated cloud and the ``sim`` driver end to end: the driver is an HTTP client of the
cloud served beside the emulator on an address of its own (the API server's has no cloud API),
VMs boot on the emulator's (mock) clock and register their Node, and failures scripted in the
providerSpec or over the cloud's API come back as MCM codes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from kubetrio.api.core import Node, PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver import Code, Driver, DriverRegistry, MachineError
from kubetrio.controllers.machine.driver.sim import SimDriver, register_sim
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cluster import NEVER_READY_ANNOTATION, ClusterSimulation

NO_SECRET: dict[str, bytes] = {}


def cloud_url(emu: Emulator) -> str:
    return emu.extension(SimulatedCloud).url


def machine_class(name: str = "small", **spec: Any) -> MachineClass:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "provider": "sim",
            "providerSpec": {"region": "eu-1", **spec},
        },
        MachineClass,
    )


def machine(name: str, provider_id: str = "") -> Machine:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"class": {"kind": "MachineClass", "name": "small"}, "providerID": provider_id},
        },
        Machine,
    )


async def code_of(call: Any) -> Code:
    with pytest.raises(MachineError) as info:
        await call
    return info.value.code


async def test_create_boots_and_registers_node(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = Client.from_url(emu.url, token=emu.token)
    registry = DriverRegistry()
    register_sim(registry, cloud_url(emu))
    driver = registry.for_class(machine_class())
    assert isinstance(driver, SimDriver) and isinstance(driver, Driver)
    cls = machine_class(bootSeconds=30)
    m = machine("m-1")

    created = await driver.create_machine(m, cls, NO_SECRET)
    assert created.provider_id.startswith("sim://eu-1/vm-")
    assert created.node_name == "m-1"
    again = await driver.create_machine(m, cls, NO_SECRET)
    assert again.provider_id == created.provider_id  # idempotent per machine

    await trio.sleep(29)
    assert await client.get_or_none(Node, "m-1") is None
    await trio.sleep(2)
    node = await client.get(Node, "m-1")
    assert node.spec.provider_id == created.provider_id
    assert node.metadata.labels["kubernetes.io/hostname"] == "m-1"
    assert node.metadata.labels["topology.kubernetes.io/region"] == "eu-1"
    ready = node.condition("Ready")
    assert ready is not None and ready.status == "True"
    assert node.status.capacity["cpu"] == "2"

    status = await driver.get_machine_status(m, cls, NO_SECRET)
    assert (status.provider_id, status.node_name) == (created.provider_id, "m-1")
    by_id = await driver.get_machine_status(
        machine("other-name", created.provider_id), cls, NO_SECRET
    )
    assert by_id.provider_id == created.provider_id


async def test_scripted_create_errors(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    driver = SimDriver(cloud_url(emu))
    cls = machine_class(failNext={"create": {"code": "ResourceExhausted", "count": 2}})
    m = machine("m-1")
    assert await code_of(driver.create_machine(m, cls, NO_SECRET)) is Code.ResourceExhausted
    assert await code_of(driver.create_machine(m, cls, NO_SECRET)) is Code.ResourceExhausted
    assert (await driver.create_machine(m, cls, NO_SECRET)).provider_id
    assert (await driver.create_machine(machine("m-2"), cls, NO_SECRET)).provider_id

    # Scripted from outside: the next delete of the class is Unavailable, then it works.
    body = {"class": "default/small", "operation": "delete", "code": "Unavailable", "count": 1}
    assert (await EmuClient(cloud_url(emu)).request("POST", "/v1/script", body)).status == 200
    with pytest.raises(MachineError) as info:
        await driver.delete_machine(m, cls, NO_SECRET)
    error = info.value
    assert error.code is Code.Unavailable and error.transient
    assert str(error).startswith("machine codes error: code = [Unavailable]")
    await driver.delete_machine(m, cls, NO_SECRET)

    bad = machine_class(bootSeconds="soon")
    with pytest.raises(MachineError, match=r"providerSpec\.bootSeconds") as bad_info:
        await driver.create_machine(machine("m-3"), bad, NO_SECRET)
    assert bad_info.value.code is Code.InvalidArgument


async def test_list_and_delete(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    client = Client.from_url(emu.url, token=emu.token)
    driver = SimDriver(cloud_url(emu))
    small, large = machine_class("small"), machine_class("large")
    a = await driver.create_machine(machine("a"), small, NO_SECRET)
    b = await driver.create_machine(machine("b"), small, NO_SECRET)
    c = await driver.create_machine(machine("c"), large, NO_SECRET)
    assert await driver.list_machines(small, NO_SECRET) == {a.provider_id: "a", b.provider_id: "b"}
    assert await driver.list_machines(large, NO_SECRET) == {c.provider_id: "c"}

    await trio.sleep(1)
    assert await client.get_or_none(Node, "a") is not None
    await driver.delete_machine(machine("a", a.provider_id), small, NO_SECRET)
    assert await code_of(driver.get_machine_status(machine("a"), small, NO_SECRET)) is (
        Code.NotFound
    )
    assert await code_of(driver.delete_machine(machine("a"), small, NO_SECRET)) is Code.NotFound
    assert await driver.list_machines(small, NO_SECRET) == {b.provider_id: "b"}
    # As in a real cloud, the Node stays until the machine controller deletes it; its kubelet
    # is gone with the VM.
    node = await client.get(Node, "a")
    ready = node.condition("Ready")
    assert ready is not None and ready.status == "Unknown"
    vms = (await EmuClient(cloud_url(emu)).get("/v1/vms")).json()["items"]
    assert sorted(vm["machineName"] for vm in vms) == ["b", "c"]


async def test_initialization_when_scripted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    driver = SimDriver(cloud_url(emu))
    plain, needs = machine_class("plain"), machine_class("needs", needsInitialization=True)
    await driver.create_machine(machine("p"), plain, NO_SECRET)
    assert await code_of(driver.initialize_machine(machine("p"), plain, NO_SECRET)) is (
        Code.Unimplemented
    )
    await driver.create_machine(machine("n"), needs, NO_SECRET)
    assert await code_of(driver.get_machine_status(machine("n"), needs, NO_SECRET)) is (
        Code.Uninitialized
    )
    await driver.initialize_machine(machine("n"), needs, NO_SECRET)
    assert (await driver.get_machine_status(machine("n"), needs, NO_SECRET)).node_name == "n"


async def test_get_volume_ids_pairs_by_name(emu: Emulator) -> None:
    driver = SimDriver(cloud_url(emu))
    pvs = [
        msgspec.convert(
            {"metadata": {"name": name}, "spec": {"csi": {"driver": drv, "volumeHandle": h}}},
            PersistentVolume,
        )
        for name, drv, h in [
            ("pv-other", "ebs.csi.aws.com", "vol-aws"),
            ("pv-a", "sim.csi.kubetrio.io", "sim-vol-a"),
            ("pv-b", "sim.csi.kubetrio.io", "sim-vol-b"),
        ]
    ]
    pvs.append(msgspec.convert({"metadata": {"name": "pv-nfs"}}, PersistentVolume))
    assert await driver.get_volume_ids(pvs) == {"pv-a": "sim-vol-a", "pv-b": "sim-vol-b"}


async def test_never_ready_and_later_condition(mock_clock: trio.testing.MockClock) -> None:
    async with serve_world(simulate=ClusterSimulation()) as emu:
        client = Client.from_url(emu.url, token=emu.token)
        driver = SimDriver(cloud_url(emu))
        never = machine_class("never", neverReady=True, nodeName="stale-node")
        going_bad = machine_class(
            "bad",
            bootSeconds=10,
            conditionAfter={"type": "ReadonlyFilesystem", "status": "True", "afterSeconds": 600},
        )
        created = await driver.create_machine(machine("n"), never, NO_SECRET)
        assert created.node_name == "stale-node"
        await driver.create_machine(machine("b"), going_bad, NO_SECRET)
        await trio.sleep(60)
        node = await client.get(Node, "stale-node")
        assert node.metadata.annotations[NEVER_READY_ANNOTATION] == "true"
        assert node.condition("Ready") is None  # the simulated kubelet stays away too
        bad = await client.get(Node, "b")
        assert bad.condition("ReadonlyFilesystem") is None
        await trio.sleep(600)
        bad = await client.get(Node, "b")
        cond = bad.condition("ReadonlyFilesystem")
        assert cond is not None and cond.status == "True"
        ready = bad.condition("Ready")
        assert ready is not None and ready.status == "True"


async def test_no_response_is_unavailable() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    driver = SimDriver(f"http://127.0.0.1:{port}", timeout=2.0)
    cls = machine_class()
    assert await code_of(driver.create_machine(machine("m"), cls, NO_SECRET)) is Code.Unavailable
    assert await code_of(driver.list_machines(cls, NO_SECRET)) is Code.Unavailable
