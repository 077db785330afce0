"""A manager running the machine and MachineSet controllers against the emulator, with
helpers to seed sets and wait on what the cache shows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machineset.reconciler import MachineSetContext
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.machines import MACHINE_API, Harness, machine_manager


def machine_set_doc(
    name: str, replicas: int, machine_class: str = "small", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"set": name}},
            "template": {
                "metadata": {"labels": {"set": name, "name": name}},
                "spec": {
                    "class": {"kind": "MachineClass", "name": machine_class},
                    "nodeTemplate": {"metadata": {"labels": {"pool": name}}},
                },
            },
            **spec,
        },
    }


@dataclass
class SetHarness:
    h: Harness
    sets: MachineSetContext
    set_changes: InformerChanges

    def machine_set(self, name: str) -> MachineSet | None:
        return self.sets.sets.get("default", name)

    def machines_of(self, name: str) -> list[Machine]:
        ms = self.machine_set(name)
        uid = ms.metadata.uid if ms is not None else None
        return [
            m
            for m in self.h.ctx.machines.list("default")
            if (ref := m.metadata.controller_ref()) is not None and ref.uid == uid
        ]

    async def wait_set(
        self, name: str, condition: Callable[[MachineSet | None], bool], within: float = 3600
    ) -> MachineSet | None:
        deadline = trio.current_time() + within
        ok = await self.set_changes.wait_until(lambda: condition(self.machine_set(name)), deadline)
        assert ok, f"machineset {name} never got there; last seen: {self.machine_set(name)}"
        return self.machine_set(name)

    async def wait_machines(
        self, condition: Callable[[list[Machine]], bool], within: float = 3600
    ) -> list[Machine]:
        deadline = trio.current_time() + within
        every = lambda: self.h.ctx.machines.list("default")  # noqa: E731
        ok = await self.h.ctx.machine_changes.wait_until(lambda: condition(every()), deadline)
        assert ok, f"the machines never got there; last seen: {[m.name for m in every()]}"
        return every()

    async def wait_ready(self, name: str, replicas: int, within: float = 3600) -> MachineSet:
        ms = await self.wait_set(
            name,
            lambda s: (
                s is not None
                and s.status.replicas == replicas
                and s.status.ready_replicas == replicas
                and s.status.observed_generation == s.metadata.generation
            ),
            within,
        )
        assert ms is not None
        return ms


@asynccontextmanager
async def machineset_manager(emu: Any, **options: Any) -> AsyncIterator[SetHarness]:
    made: list[tuple[MachineSetContext, InformerChanges]] = []

    def add(manager: Manager, config: ManagerConfig) -> None:
        ctx = machineset_setup(manager, config)
        changes = InformerChanges.of(manager.cache.informer(MachineSet, namespace="default"))
        made.append((ctx, changes))

    async with machine_manager(emu, also=(add,), **options) as h:
        yield SetHarness(h, *made[0])
