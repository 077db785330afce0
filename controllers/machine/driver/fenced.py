"""A driver whose VM-changing calls need the leader fence: a manager frozen past its lease
must not create or delete VMs when it wakes, any more than it may write to the API server.
Reads (status, list, volume IDs) pass: they change nothing."""

from __future__ import annotations

from collections.abc import Sequence

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver.driver import (
    CreateResult,
    Driver,
    SecretData,
    StatusResult,
)
from kubetrio.runtime.leaderelection.fence import Fence


class FencedDriver:
    def __init__(self, driver: Driver, fence: Fence) -> None:
        self.driver = driver
        self.fence = fence

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        self.fence.check(f"CreateMachine {machine.namespace}/{machine.name}")
        return await self.driver.create_machine(machine, machine_class, secret_data)

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        self.fence.check(f"InitializeMachine {machine.namespace}/{machine.name}")
        return await self.driver.initialize_machine(machine, machine_class, secret_data)

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        self.fence.check(f"DeleteMachine {machine.namespace}/{machine.name}")
        return await self.driver.delete_machine(machine, machine_class, secret_data)

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        return await self.driver.get_machine_status(machine, machine_class, secret_data)

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        return await self.driver.list_machines(machine_class, secret_data)

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        return await self.driver.get_volume_ids(pvs)
