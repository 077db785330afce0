"""MCM's codes and error rendering round-trip; the registry picks drivers by provider name; the
``sim`` driver reaches its cloud at the configured address (the class secret's, else the
manager's), never through the API server's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver import (
    Code,
    CreateResult,
    Driver,
    DriverRegistry,
    MachineError,
    StatusResult,
    UnknownProvider,
    parse_machine_error,
)
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.driver.providerid import same_vm
from kubetrio.controllers.machine.driver.sim import ENDPOINT_KEY, SimDriver
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.leaderelection.fence import Fence, NotLeader
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud


def test_codes_match_mcm() -> None:
    assert Code.OK == 0
    assert Code.NotFound == 5
    assert Code.ResourceExhausted == 8
    assert Code.Unimplemented == 12
    assert Code.Unavailable == 14
    assert Code.Unauthenticated == 16
    assert Code.Uninitialized == 17
    assert len(Code) == 18
    assert Code.from_name("DeadlineExceeded") is Code.DeadlineExceeded
    with pytest.raises(ValueError, match="unknown machine code"):
        Code.from_name("Nope")


def test_error_renders_as_mcm() -> None:
    error = MachineError(Code.ResourceExhausted, "quota exceeded")
    assert (
        str(error) == "machine codes error: code = [ResourceExhausted] message = [quota exceeded]"
    )
    assert not error.transient
    assert MachineError(Code.Unavailable, "x").transient


@pytest.mark.parametrize("code", list(Code))
def test_error_round_trips(code: Code) -> None:
    message = "VM [a] failed: ] odd"
    parsed = parse_machine_error(str(MachineError(code, message)))
    assert parsed is not None
    assert parsed.code is code
    assert parsed.message == message


def test_parse_inside_wrapping_text() -> None:
    text = "Cloud provider message - machine codes error: code = [NotFound] message = [gone]"
    parsed = parse_machine_error(text)
    assert parsed is not None and parsed.code is Code.NotFound and parsed.message == "gone"


@pytest.mark.parametrize(
    "text",
    ["plain failure", "machine codes error: code = [Bogus] message = [x]", ""],
)
def test_parse_other_text(text: str) -> None:
    assert parse_machine_error(text) is None


class FakeDriver:
    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        return CreateResult(provider_id="fake://1", node_name=machine.name)

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        raise MachineError(Code.Unimplemented, "no initialization")

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        return ""

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        raise MachineError(Code.NotFound, "no VM")

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        return {}

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        return {}


def test_registry_by_provider() -> None:
    registry = DriverRegistry(default="fake")
    driver = FakeDriver()
    assert isinstance(driver, Driver)
    registry.register("fake", driver)
    assert registry.get("fake") is driver
    assert "fake" in registry and list(registry) == ["fake"]
    no_provider = msgspec.convert({"metadata": {"name": "c"}}, MachineClass)
    assert registry.for_class(no_provider) is driver
    with pytest.raises(UnknownProvider, match=r'"aws".*known: fake'):
        registry.get("aws")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("fake", driver)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("aws:///eu-west-1/i-0abc", "aws:///eu-west-1a/i-0abc", True),  # provider-aws vs the CCM
        ("aws:///eu-west-1/i-0abc", "aws:///eu-west-1/i-0def", False),
        ("sim://eu-1/vm-1", "sim://eu-1/vm-1", True),
        ("sim://eu-1/vm-1", "aws:///eu-1/vm-1", False),
        ("sim://eu-1/vm-1", "", False),
        ("", "", False),
        ("opaque-1", "opaque-1", True),
        ("opaque-1", "opaque-2", False),
    ],
)
def test_provider_ids_name_one_vm_by_scheme_and_last_segment(a: str, b: str, same: bool) -> None:
    assert same_vm(a, b) is same


def sim_class(**spec: Any) -> MachineClass:
    doc = {"metadata": {"name": "small", "namespace": "default"}, "provider": "sim"}
    return msgspec.convert({**doc, "providerSpec": {"region": "eu-1", **spec}}, MachineClass)


def sim_machine(name: str) -> Machine:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"class": {"name": "small"}}},
        Machine,
    )


async def test_the_api_servers_address_serves_no_cloud(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The cloud answers on its own address only: the API server has no ``/_cloud`` (nor the
    cloud's ``/v1``), and a driver pointed at the API server is refused there (anonymous, as a
    kube-apiserver refuses a path it does not serve to a caller without credentials)."""
    create = {
        "machineClass": {"name": "small", "namespace": "default", "providerSpec": {}},
        "machine": {"name": "m-1", "namespace": "default"},
    }
    api = EmuClient(emu.url, emu.token)
    for path in ("/_cloud/v1/create", "/v1/create"):
        assert (await api.request("POST", path, create)).status == 404, path
    with pytest.raises(MachineError) as refused:
        await SimDriver(emu.url).create_machine(sim_machine("m-1"), sim_class(), {})
    assert refused.value.code is Code.PermissionDenied
    assert 'cannot post path "/v1/create"' in str(refused.value)
    cloud = emu.extension(SimulatedCloud)
    assert cloud.url != emu.url and cloud.vms == {}
    created = await SimDriver(cloud.url).create_machine(sim_machine("m-1"), sim_class(), {})
    assert set(cloud.vms) == {created.provider_id}


async def test_a_class_secret_names_its_own_cloud(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The secret's ``simCloudURL`` wins over the manager's address, as a real provider's
    endpoint comes with its credentials; its value is never shown, even when it is wrong."""
    configured = emu.extension(SimulatedCloud)
    driver = SimDriver(configured.url)
    async with serve_world() as other_world:
        other = other_world.extension(SimulatedCloud)
        secret = {ENDPOINT_KEY: other.url.encode()}
        created = await driver.create_machine(sim_machine("m-1"), sim_class(), secret)
        assert set(other.vms) == {created.provider_id} and configured.vms == {}
        assert await driver.list_machines(sim_class(), secret) == {created.provider_id: "m-1"}
        assert await driver.list_machines(sim_class(), {}) == {}

    bad = {ENDPOINT_KEY: b"cloud.example:8080"}
    with pytest.raises(MachineError) as invalid:
        await driver.create_machine(sim_machine("m-2"), sim_class(), bad)
    assert invalid.value.code is Code.InvalidArgument
    assert "simCloudURL: expected an http(s) URL" in str(invalid.value)
    assert "cloud.example" not in str(invalid.value)

    with pytest.raises(MachineError) as unset:
        await SimDriver().create_machine(sim_machine("m-3"), sim_class(), {})
    assert unset.value.code is Code.InvalidArgument
    assert "machine.simCloudURL (--sim-cloud-url)" in str(unset.value)
    with pytest.raises(ValueError, match="simCloudURL: expected an http"):
        SimDriver("cloud:8080")


async def test_a_fenced_sim_driver_changes_no_vm_without_the_lease(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    cloud = emu.extension(SimulatedCloud)
    held = True
    driver = SimDriver(cloud.url).fenced(Fence(lambda: held))
    created = await driver.create_machine(sim_machine("m-1"), sim_class(), {})
    held = False
    with pytest.raises(NotLeader, match="create at the simulated cloud"):
        await driver.create_machine(sim_machine("m-2"), sim_class(), {})
    with pytest.raises(NotLeader, match="delete at the simulated cloud"):
        await driver.delete_machine(sim_machine("m-1"), sim_class(), {})
    assert set(cloud.vms) == {created.provider_id}
    # Reads change nothing: they pass.
    assert await driver.list_machines(sim_class(), {}) == {created.provider_id: "m-1"}
    assert (await driver.get_machine_status(sim_machine("m-1"), sim_class(), {})).node_name
