"""MCM's codes and error rendering round-trip; the registry picks drivers by provider name."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

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
