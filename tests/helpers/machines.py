"""A machine controller on a manager against the emulator, in the test's own trio run, with
helpers to seed classes and machines and to wait on what the controller's cache shows."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio

from kubetrio.api.core import Event, Node
from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.driver import DriverRegistry
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.setup import setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.testing import run_manager

MACHINE_API = "machine.sapcloud.io/v1alpha1"
USER_DATA = "#!/bin/sh\nkubeadm join --token <<BOOTSTRAP_TOKEN>>\n"


def install_crds(emu: Emulator) -> None:
    for crd in crd_documents():
        emu.create(crd)


def machine_class_doc(name: str = "small", **provider_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineClass",
        "metadata": {"name": name, "namespace": "default"},
        "provider": "sim",
        "providerSpec": {"region": "eu-1", **provider_spec},
        "secretRef": {"name": f"{name}-secret", "namespace": "default"},
    }


def class_secret_doc(name: str = "small", user_data: str = USER_DATA) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-secret", "namespace": "default"},
        "data": {"userData": base64.b64encode(user_data.encode()).decode()},
    }


def machine_doc(
    name: str, machine_class: str = "small", deployment: str = "pool-a", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": "default", "labels": {"name": deployment}},
        "spec": {"class": {"kind": "MachineClass", "name": machine_class}, **spec},
    }


@dataclass
class Harness:
    emu: Emulator
    client: Client
    manager: Manager
    ctx: MachineContext

    def machine(self, name: str) -> Machine | None:
        return self.ctx.machines.get("default", name)

    def node(self, name: str) -> Node | None:
        return self.ctx.nodes.get("", name)

    async def wait_machine(
        self, name: str, condition: Callable[[Machine | None], bool], within: float = 3600
    ) -> Machine | None:
        """Until the cached machine satisfies ``condition``; fails the test on timeout."""
        deadline = trio.current_time() + within
        ok = await self.ctx.machine_changes.wait_until(
            lambda: condition(self.machine(name)), deadline
        )
        assert ok, f"machine {name} never got there; last seen: {self.machine(name)}"
        return self.machine(name)

    async def wait_phase(self, name: str, phase: str, within: float = 3600) -> Machine:
        machine = await self.wait_machine(
            name, lambda m: m is not None and m.phase == phase, within
        )
        assert machine is not None
        return machine

    async def wait_gone(self, name: str, within: float = 3600) -> None:
        await self.wait_machine(name, lambda m: m is None, within)

    async def wait_node(
        self, name: str, condition: Callable[[Node | None], bool], within: float = 3600
    ) -> Node | None:
        deadline = trio.current_time() + within
        ok = await self.ctx.drainer.cache.node_changes.wait_until(
            lambda: condition(self.node(name)), deadline
        )
        assert ok, f"node {name} never got there; last seen: {self.node(name)}"
        return self.node(name)

    async def wait_pods(self, condition: Callable[[], bool], within: float = 3600) -> None:
        """Until ``condition`` holds, re-checked on every pod change the cache applies."""
        deadline = trio.current_time() + within
        ok = await self.ctx.drainer.cache.pod_changes.wait_until(condition, deadline)
        assert ok, "the pods never got there"

    def description(self, name: str) -> str:
        machine = self.machine(name)
        return machine.status.last_operation.description if machine else ""


@asynccontextmanager
async def machine_manager(
    emu: Emulator,
    *,
    workers: int = 5,
    also: Sequence[Callable[[Manager, ManagerConfig], object]] = (),
    drivers: Callable[[Manager], DriverRegistry] | None = None,
    **machine_options: Any,
) -> AsyncIterator[Harness]:
    """A manager running the machine controller (and the setups in ``also``), through the
    testing kit's ``run_manager``; stopped (gracefully) on exit. ``drivers`` makes the
    manager's machine drivers (default: the build's, i.e. ``sim``, calling ``emu``'s simulated
    cloud at its own address)."""
    machine_options.setdefault("sim_cloud_url", emu.extension(SimulatedCloud).url)
    config = ManagerConfig(machine=MachineOptions(**machine_options), workers={"machine": workers})
    contexts: list[MachineContext] = []

    def machine(manager: Manager, config: ManagerConfig) -> None:
        contexts.append(setup(manager, config, None if drivers is None else drivers(manager)))

    async with run_manager(emu, machine, *also, config=config, workers=config.workers) as manager:
        yield Harness(emu, manager.client, manager, contexts[0])


def seed_class(emu: Emulator, name: str = "small", **provider_spec: Any) -> None:
    emu.create(class_secret_doc(name))
    emu.create(machine_class_doc(name, **provider_spec))


async def event_reasons(h: Harness, name: str) -> list[str]:
    events = (await h.client.list(Event, namespace="default")).items
    ours = [
        e for e in events if e.involved_object.name == name and e.involved_object.kind == "Machine"
    ]
    return [e.reason for e in sorted(ours, key=lambda e: int(e.metadata.resource_version))]


async def event_messages(h: Harness, name: str) -> str:
    events = (await h.client.list(Event, namespace="default")).items
    return "\n".join(e.message for e in events if e.involved_object.name == name)


async def running_machine(emu: Emulator, h: Harness, name: str = "m-1", **spec: object) -> None:
    emu.create(machine_doc(name, **spec))
    await h.wait_phase(name, PHASE_RUNNING)
