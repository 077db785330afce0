"""The driver protocol (MCM's ``driver.Driver``): how the machine controller asks a provider to
create, initialise, inspect, list and delete VMs. Every method raises ``MachineError`` on
failure; the controller decides what a code means for the machine.

A class's ``nodeTemplate`` (MCM's capacity, instance type, region, zone, architecture) has been
validated before a driver creates a VM; ``validation.class_node_template`` gives it typed.

Secrets reach drivers as ``secret_data`` (the class secret's decoded data) and must never be
logged or put into an error message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass

SecretData = Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class CreateResult:
    """The VM the provider created: its ID and the name its Node registers under."""

    provider_id: str
    node_name: str
    last_known_state: str = ""


@dataclass(frozen=True, slots=True)
class StatusResult:
    """A VM that exists at the provider."""

    provider_id: str
    node_name: str


@runtime_checkable
class Driver(Protocol):
    """One cloud provider. Implementations are stateless clients of the provider's API, so a
    restarted manager finds every VM where it was left."""

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        """Create the machine's VM (idempotent per machine name)."""
        ...

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        """Finish setting up a VM that reported ``Uninitialized``; ``Unimplemented`` when the
        provider needs no such step."""
        ...

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        """Delete the machine's VM; ``NotFound`` when it is already gone. The last known state."""
        ...

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        """The machine's VM; ``NotFound`` when there is none."""
        ...

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        """Every VM of the class: provider ID -> machine name."""
        ...

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        """PV name -> volume ID for the PVs this provider owns; the others are left out (so the
        answer is paired by name, never by position)."""
        ...
