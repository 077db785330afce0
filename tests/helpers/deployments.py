"""A MachineDeployment controller on a manager against the emulator, and ``SetSimulator``: a
stand-in for the MachineSet controller that gives each set ``spec.replicas`` machines which
become available ``boot`` simulated seconds after they are asked for — so the deployment
controller's own arithmetic can be tested fast and in isolation (as Kubernetes' deployment
integration tests mark pods ready themselves). Tests with real machines use the real MachineSet
and machine controllers instead."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from kubetrio.api.core import Event, Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machinedeployment.reconciler import DeploymentReconciler
from kubetrio.controllers.machinedeployment.setup import setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.machines import MACHINE_API, Harness, machine_manager


def deployment_doc(
    name: str = "pool",
    replicas: int = 3,
    machine_class: str = "small",
    strategy: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": name}},
            "strategy": strategy
            or {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"class": {"kind": "MachineClass", "name": machine_class}},
            },
            **spec,
        },
    }


@dataclass
class SetSimulator:
    """Machines of each set as ready-at times; scale-down removes unready ones first, then
    the newest (MCM's deletion priority), as the MachineSet controller does."""

    emu: Emulator
    sets: Lister[MachineSet]
    changes: InformerChanges
    boot: float = 60.0
    machines: dict[str, list[float]] = field(default_factory=dict)
    peak_total: int = 0
    # (total machines, available machines) after every change the stand-in applied.
    history: list[tuple[int, int]] = field(default_factory=list)
    wake: trio.Event = field(default_factory=trio.Event)

    def fail(self, set_name: str, count: int = 1) -> None:
        """``count`` ready machines break and are replaced (booting again)."""
        now = trio.current_time()
        ready = [i for i, t in enumerate(self.machines.get(set_name, [])) if t <= now]
        for index in ready[:count]:
            self.machines[set_name][index] = now + self.boot
        self.wake.set()

    def boot_now(self, boot: float) -> None:
        """Every booting machine is up now; new ones take ``boot`` seconds from here on."""
        now = trio.current_time()
        self.boot = boot
        for times in self.machines.values():
            times[:] = [min(t, now) for t in times]
        self.wake.set()

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._apply()
            pending = [t for ts in self.machines.values() for t in ts if t > trio.current_time()]
            with trio.move_on_at(min(pending, default=float("inf"))):
                async with trio.open_nursery() as nursery:
                    self.wake = trio.Event()

                    async def woken() -> None:
                        await self.wake.wait()
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(woken)
                    await self.changes.next_change()
                    nursery.cancel_scope.cancel()

    def _apply(self) -> None:
        now = trio.current_time()
        for machine_set in self.sets.list("default"):
            have = self.machines.setdefault(machine_set.name, [])
            want = 0 if machine_set.deleting else machine_set.spec.replicas
            while len(have) < want:
                have.append(now + self.boot)
            if len(have) > want:
                have.sort(key=lambda t: (t <= now, -t))
                del have[: len(have) - want]
            ready = sum(1 for t in have if t <= now)
            status = {
                "replicas": len(have),
                "fullyLabeledReplicas": len(have),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": machine_set.metadata.generation,
            }
            current = self.emu.get(MACHINE_API, "MachineSet", machine_set.name, "default")
            if current is not None and (current.get("status") or {}) != status:
                self.emu.set_status(MACHINE_API, "MachineSet", machine_set.name, status, "default")
        self.peak_total = max(self.peak_total, self.total())
        point = (self.total(), self.available())
        if not self.history or self.history[-1] != point:
            self.history.append(point)

    def total(self) -> int:
        return sum(len(v) for v in self.machines.values())

    def available(self) -> int:
        now = trio.current_time()
        return sum(1 for ts in self.machines.values() for t in ts if t <= now)


@dataclass
class DeploymentHarness:
    emu: Emulator
    client: Client
    manager: Manager
    reconciler: DeploymentReconciler
    deployments: Lister[MachineDeployment]
    sets: Lister[MachineSet]
    deployment_changes: InformerChanges
    set_changes: InformerChanges
    machine_changes: InformerChanges
    node_changes: InformerChanges
    sim: SetSimulator | None = None

    async def wait_cached_machine(self, name: str) -> None:
        ok = await self.machine_changes.wait_until(
            lambda: self.reconciler.machines.get("default", name) is not None,
            trio.current_time() + 60,
        )
        assert ok, f"machine {name} never reached the cache"

    async def patch(self, patch: dict[str, Any], name: str = "pool") -> int:
        """Change the deployment; its new generation."""
        written = await self.client.patch(MachineDeployment, name, patch, namespace="default")
        return written.metadata.generation

    async def events(self, name: str = "pool") -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events about the deployment, oldest first."""
        listed = await self.client.list(Event, namespace="default")
        return [
            (e.type, e.reason, e.message)
            for e in sorted(listed.items, key=lambda e: e.metadata.creation_timestamp or "")
            if e.involved_object.kind == "MachineDeployment" and e.involved_object.name == name
        ]

    def deployment(self, name: str = "pool") -> MachineDeployment | None:
        return self.deployments.get("default", name)

    def sets_of(self, name: str = "pool") -> list[MachineSet]:
        deployment = self.deployment(name)
        uid = deployment.metadata.uid if deployment else None
        return [
            s
            for s in self.sets.list("default")
            if (ref := s.metadata.controller_ref()) is not None and ref.uid == uid
        ]

    async def wait_deployment(
        self,
        condition: Callable[[MachineDeployment | None], bool],
        name: str = "pool",
        within: float = 3600,
    ) -> MachineDeployment | None:
        deadline = trio.current_time() + within
        ok = await self.deployment_changes.wait_until(
            lambda: condition(self.deployment(name)), deadline
        )
        assert ok, f"deployment {name} never got there; last seen: {self.deployment(name)}"
        return self.deployment(name)

    async def wait_complete(
        self, name: str = "pool", within: float = 3600, generation: int = 0
    ) -> MachineDeployment:
        """Until the rollout of ``generation`` (or the cached one) is complete."""

        def done(d: MachineDeployment | None) -> bool:
            if d is None or d.status.observed_generation < max(d.metadata.generation, generation):
                return False
            cond = d.condition("Progressing")
            return (
                cond is not None
                and cond.reason == "NewMachineSetAvailable"
                and d.status.updated_replicas == d.spec.replicas
                and d.status.replicas == d.spec.replicas
                and d.status.available_replicas == d.spec.replicas
            )

        deployment = await self.wait_deployment(done, name, within)
        assert deployment is not None
        return deployment


@asynccontextmanager
async def deployment_manager(
    emu: Emulator,
    *,
    simulate_sets: bool = True,
    boot: float = 60.0,
    options: MachineOptions | None = None,
) -> AsyncIterator[DeploymentHarness]:
    """A manager running the deployment controller (and the set stand-in unless told not to)."""
    client = Client.from_url(emu.url, token=emu.token)
    config = ManagerConfig(machine=options or MachineOptions())
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    reconciler = setup(manager, config)
    deployment_informer = manager.cache.informer(MachineDeployment, namespace="default")
    set_informer = manager.cache.informer(MachineSet, namespace="default")
    harness = DeploymentHarness(
        emu,
        client,
        manager,
        reconciler,
        deployment_informer.lister,
        set_informer.lister,
        InformerChanges.of(deployment_informer),
        InformerChanges.of(set_informer),
        InformerChanges.of(manager.cache.informer(Machine, namespace="default")),
        InformerChanges.of(manager.cache.informer(Node)),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        if simulate_sets:
            harness.sim = SetSimulator(
                emu, set_informer.lister, InformerChanges.of(set_informer), boot
            )
            await nursery.start(harness.sim.run)
        yield harness
        manager.stop()
        nursery.cancel_scope.cancel()


@dataclass
class PoolHarness:
    """The machine, MachineSet and MachineDeployment controllers together: machines boot at
    the simulated cloud and join the simulated cluster for real."""

    h: Harness
    deployments: DeploymentHarness

    def machines(self) -> list[Machine]:
        return self.h.ctx.machines.list("default")


@asynccontextmanager
async def pool_manager(emu: Emulator, **machine_options: Any) -> AsyncIterator[PoolHarness]:
    made: list[DeploymentHarness] = []

    def add(manager: Manager, config: ManagerConfig) -> None:
        machineset_setup(manager, config)
        reconciler = setup(manager, config)
        deployment_informer = manager.cache.informer(MachineDeployment, namespace="default")
        set_informer = manager.cache.informer(MachineSet, namespace="default")
        made.append(
            DeploymentHarness(
                emu,
                manager.client,
                manager,
                reconciler,
                deployment_informer.lister,
                set_informer.lister,
                InformerChanges.of(deployment_informer),
                InformerChanges.of(set_informer),
                InformerChanges.of(manager.cache.informer(Machine, namespace="default")),
                InformerChanges.of(manager.cache.informer(Node)),
            )
        )

    async with machine_manager(emu, also=(add,), **machine_options) as h:
        yield PoolHarness(h, made[0])
