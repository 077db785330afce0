"""MCM's overshooting guard end to end: a MachineSet with too many Machines is frozen (label
``freeze: "True"``, a ``Frozen`` condition, an Event; its MachineDeployment too) and unfrozen
once the count falls to the lower limit or an operator sets the unfreeze annotation; a
deployment left frozen without a frozen set is repaired."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Event
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machineset.control import MachineControl
from kubetrio.controllers.machineset.reconciler import MachineSetContext, MachineSetReconciler
from kubetrio.controllers.safety.overshooting import (
    FREEZE_LABEL,
    OVERSHOOTING_REPLICA_COUNT,
    UNFREEZE_ANNOTATION,
    OvershootingGuard,
)
from kubetrio.controllers.safety.setup import setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.events.recorder import EventSender
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.kube import Kubectl
from tests.helpers.machines import MACHINE_API, install_crds

PERIOD = 60.0


@dataclass
class Guarded:
    emu: Emulator
    manager: Manager
    guard: OvershootingGuard
    sets: InformerChanges
    deployments: InformerChanges
    events: Informer[Event]
    event_changes: InformerChanges

    def machine_set(self, name: str) -> MachineSet:
        found = self.guard.machine_sets.get("default", name)
        assert found is not None
        return found

    def deployment(self, name: str) -> MachineDeployment:
        found = self.guard.deployments.get("default", name)
        assert found is not None
        return found

    async def until_set(self, condition: Callable[[], bool], within: float = 3 * PERIOD) -> None:
        ok = await self.sets.wait_until(condition, trio.current_time() + within)
        assert ok, "the MachineSets never got there"

    async def until_deployment(
        self, condition: Callable[[], bool], within: float = 3 * PERIOD
    ) -> None:
        ok = await self.deployments.wait_until(condition, trio.current_time() + within)
        assert ok, "the MachineDeployments never got there"


@asynccontextmanager
async def guarded(emu: Emulator, **machine_options: Any) -> AsyncIterator[Guarded]:
    """A manager running only the ``safety`` controller (no machine controller: the Machines
    here are records the guard counts, nothing creates VMs for them)."""
    client = Client.from_url(emu.url, token=emu.token)
    config = ManagerConfig(
        machine=MachineOptions(**{"safety_overshooting_period": PERIOD, **machine_options})
    )
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    guard = setup(manager, config)
    sets = InformerChanges.of(manager.cache.informer(MachineSet, namespace="default"))
    deployments = InformerChanges.of(manager.cache.informer(MachineDeployment, namespace="default"))
    events = manager.cache.informer(Event, namespace="default")
    event_changes = InformerChanges.of(events)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield Guarded(emu, manager, guard, sets, deployments, events, event_changes)
        manager.stop()


def machine_set_doc(name: str, replicas: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "default", "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
        },
    }


def deployment_doc(name: str, replicas: int, max_surge: int | str) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": name}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": 0},
            },
        },
    }


def add_machines(emu: Emulator, owner: dict[str, Any], first: int, count: int) -> None:
    """Machines with the set's template labels and an ownerReference to it, as its controller
    makes them."""
    name = owner["metadata"]["name"]
    for number in range(first, first + count):
        emu.create(
            {
                "apiVersion": MACHINE_API,
                "kind": "Machine",
                "metadata": {
                    "name": f"{name}-{number}",
                    "namespace": "default",
                    "labels": dict(owner["spec"]["template"]["metadata"]["labels"]),
                    "ownerReferences": [
                        {
                            "apiVersion": MACHINE_API,
                            "kind": "MachineSet",
                            "name": name,
                            "uid": owner["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            }
        )


def delete_machines(emu: Emulator, owner: str, *numbers: int) -> None:
    for number in numbers:
        emu.delete(MACHINE_API, "Machine", f"{owner}-{number}", "default")


def frozen(obj: MachineSet | MachineDeployment) -> bool:
    return obj.metadata.labels.get(FREEZE_LABEL) == "True"


def events_for(g: Guarded, name: str) -> list[tuple[str, str]]:
    return [
        (e.reason, e.message)
        for e in g.events.lister.list("default")
        if e.involved_object.name == name
    ]


async def until_event(g: Guarded, name: str, reason: str, message: str) -> None:
    """Until the Event is in the cache: it is written just after the freeze itself."""
    ok = await g.event_changes.wait_until(
        lambda: (reason, message) in events_for(g, name), trio.current_time() + 30
    )
    assert ok, f"no {reason} event for {name}: {events_for(g, name)}"


async def test_a_set_with_too_many_machines_is_frozen_and_unfrozen_when_back_in_bounds(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    # Alone, a set may have 2 * replicas + safetyUp = 4 machines; unfrozen at 4 - 1 = 3.
    solo = emu.create(machine_set_doc("solo", 1, {"pool": "solo"}))
    add_machines(emu, solo, 1, 3)
    async with guarded(emu) as g:
        await trio.sleep(2 * PERIOD)
        assert not frozen(g.machine_set("solo"))  # 3 < 4
        add_machines(emu, solo, 4, 1)
        added = trio.current_time()
        await g.until_set(lambda: frozen(g.machine_set("solo")))
        assert trio.current_time() - added < 5  # the add woke the guard, no period wait
        condition = g.machine_set("solo").condition("Frozen")
        assert condition is not None
        assert (condition.status, condition.reason) == ("True", OVERSHOOTING_REPLICA_COUNT)
        assert condition.message == (
            "The number of machines backing MachineSet: solo is 4 >= 4 which is the "
            "Max-ScaleUp-Limit"
        )
        await until_event(
            g,
            "solo",
            "FrozeMachineSet",
            "SafetyController: Froze MachineSet solo due to replica overshooting",
        )
        # The other machines and the set's other fields are untouched by the freeze.
        stored = emu.get(MACHINE_API, "MachineSet", "solo", "default")
        assert stored is not None and stored["spec"]["replicas"] == 1
        delete_machines(emu, "solo", 4)
        removed = trio.current_time()
        await g.until_set(lambda: not frozen(g.machine_set("solo")))
        assert trio.current_time() - removed <= PERIOD + 1  # the next pass
        assert g.machine_set("solo").condition("Frozen") is None
        await until_event(
            g, "solo", "UnfrozeMachineSet", "SafetyController: Unfroze MachineSet solo"
        )


async def test_a_freeze_that_meets_a_conflict_reads_again_and_goes_through(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Another writer between the guard's read and its status write (the MachineSet
    controller's status, on a busy server) must not put the freeze off to the next pass: by
    then the overshoot may be over and the freeze missed."""
    install_crds(emu)
    solo = emu.create(machine_set_doc("solo", 1, {"pool": "solo"}))
    add_machines(emu, solo, 1, 3)
    async with guarded(emu) as g:
        await trio.sleep(2 * PERIOD)
        emu.faults.add(
            verb="patch", resource="machinesets", subresource="status", status=409, count=1
        )
        add_machines(emu, solo, 4, 1)
        added = trio.current_time()
        await g.until_set(lambda: frozen(g.machine_set("solo")))
        assert trio.current_time() - added < 5  # not the next pass, a minute later
        condition = g.machine_set("solo").condition("Frozen")
        assert condition is not None and condition.reason == OVERSHOOTING_REPLICA_COUNT


async def test_a_deployment_counts_its_surge_and_is_frozen_with_its_set(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    # replicas 4 + maxSurge 25% (1) + safetyUp 2 = 7 machines freeze; 6 unfreeze.
    emu.create(deployment_doc("pool", 4, "25%"))
    current = emu.create(machine_set_doc("pool-new", 4, {"name": "pool"}))
    add_machines(emu, current, 1, 6)
    # A deployment whose maxSurge means nothing is skipped (logged), never stops the others.
    emu.create(deployment_doc("broken", 1, "lots"))
    broken = emu.create(machine_set_doc("broken-1", 1, {"name": "broken"}))
    add_machines(emu, broken, 1, 9)
    async with guarded(emu) as g:
        await trio.sleep(2 * PERIOD)
        assert not frozen(g.machine_set("pool-new"))  # 6 < 7
        add_machines(emu, current, 7, 1)
        await g.until_deployment(lambda: frozen(g.deployment("pool")))
        assert frozen(g.machine_set("pool-new"))
        condition = g.deployment("pool").condition("Frozen")
        assert condition is not None and condition.reason == OVERSHOOTING_REPLICA_COUNT
        assert not frozen(g.machine_set("broken-1")) and not frozen(g.deployment("broken"))
        delete_machines(emu, "pool-new", 7)
        await g.until_deployment(lambda: not frozen(g.deployment("pool")))
        assert g.deployment("pool").condition("Frozen") is None
        await g.until_set(lambda: not frozen(g.machine_set("pool-new")))


async def test_the_unfreeze_annotation_and_a_stale_deployment_freeze(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    solo = emu.create(machine_set_doc("solo", 1, {"pool": "solo"}))
    add_machines(emu, solo, 1, 4)
    stale = deployment_doc("stale", 1, 1)
    stale["metadata"]["labels"] = {FREEZE_LABEL: "True"}
    emu.create(stale)
    # safetyDown 2: frozen at 4, unfrozen only at 2, so 3 machines stay frozen by themselves.
    async with guarded(emu, safety_down=2) as g:
        await g.until_set(lambda: frozen(g.machine_set("solo")))
        delete_machines(emu, "solo", 4)
        await trio.sleep(2 * PERIOD)
        assert frozen(g.machine_set("solo"))
        # A deployment frozen with no frozen set behind it is put right.
        stale_deployment = g.deployment("stale")
        assert not frozen(stale_deployment), stale_deployment.metadata.labels
        obj = emu.get(MACHINE_API, "MachineSet", "solo", "default")
        assert obj is not None
        obj["metadata"].setdefault("annotations", {})[UNFREEZE_ANNOTATION] = "True"
        emu.update(obj)
        await g.until_set(lambda: not frozen(g.machine_set("solo")))
        assert UNFREEZE_ANNOTATION not in g.machine_set("solo").metadata.annotations
        await trio.sleep(2 * PERIOD)
        assert not frozen(g.machine_set("solo"))  # 3 < 4: it stays unfrozen


@pytest.mark.slow
@pytest.mark.kubectl
async def test_kubectl_sees_the_freeze_and_lifts_it_with_the_annotation(
    emu: Emulator, kubectl: Kubectl
) -> None:
    # Real clock (kubectl is a real process): a 1 s period keeps it short.
    install_crds(emu)
    solo = emu.create(machine_set_doc("solo", 1, {"pool": "solo"}))
    add_machines(emu, solo, 1, 4)
    async with guarded(emu, safety_down=2, safety_overshooting_period=1.0) as g:
        with trio.fail_after(30):
            await g.until_set(lambda: frozen(g.machine_set("solo")))
        listed = await kubectl.json("get", "machineset", "solo", "-n", "default")
        assert listed["metadata"]["labels"][FREEZE_LABEL] == "True"
        frozen_condition = [
            c for c in listed["status"]["machineSetCondition"] if c["type"] == "Frozen"
        ]
        assert frozen_condition and frozen_condition[0]["reason"] == OVERSHOOTING_REPLICA_COUNT
        await kubectl.out("delete", "machine", "solo-4", "-n", "default")
        await kubectl.out(
            "annotate", "machineset", "solo", "-n", "default", f"{UNFREEZE_ANNOTATION}=True"
        )
        with trio.fail_after(30):
            await g.until_set(lambda: not frozen(g.machine_set("solo")))
        listed = await kubectl.json("get", "machineset", "solo", "-n", "default")
        assert FREEZE_LABEL not in listed["metadata"].get("labels", {})
        assert UNFREEZE_ANNOTATION not in listed["metadata"].get("annotations", {})
        assert not [
            c for c in listed["status"].get("machineSetCondition", []) if c["type"] == "Frozen"
        ]


class _Snapshot:
    """A lister frozen at one copy: the MachineSet controller's cache lagging a write."""

    def __init__(self, *objs: Any) -> None:
        self.objs = list(objs)

    def get(self, namespace: str, name: str) -> Any:
        return next((o for o in self.objs if o.metadata.name == name), None)

    def list(self, namespace: str | None = None) -> list[Any]:
        return list(self.objs)

    def by_index(self, index: str, value: str) -> list[Any]:
        return []


async def test_a_machineset_pass_from_a_stale_copy_keeps_the_frozen_condition(
    emu: Emulator,
) -> None:
    """The set's status write carries the resourceVersion it started from: a pass that began
    before the safety controller froze the set cannot erase the Frozen condition (the freeze
    label would stay while the condition went, and the next sweep would flap the freeze)."""
    install_crds(emu)
    client = Client.from_url(emu.url, token=emu.token)
    emu.create(
        {
            "apiVersion": MACHINE_API,
            "kind": "MachineSet",
            "metadata": {
                "name": "s",
                "namespace": "default",
                "labels": {"pool": "s"},
                "finalizers": ["machine.sapcloud.io/machine-controller-manager"],
            },
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"pool": "s"}},
                "template": {
                    "metadata": {"labels": {"pool": "s"}},
                    "spec": {"class": {"kind": "MachineClass", "name": "small"}},
                },
            },
        }
    )
    stale = await client.get(MachineSet, "s", namespace="default")
    guard = OvershootingGuard(
        client,
        Informer(client, Machine),
        _Snapshot(),  # type: ignore[arg-type]
        _Snapshot(),  # type: ignore[arg-type]
        EventSender(client).recorder("test"),
    )
    await guard._freeze_set(stale, "OverShootingReplicaCount", "too many machines")
    ctx = MachineSetContext(
        client=client,
        sets=_Snapshot(stale),  # type: ignore[arg-type]
        machines=_Snapshot(),  # type: ignore[arg-type]
        control=MachineControl(client, EventSender(client).recorder("test")),
    )
    await MachineSetReconciler(ctx).reconcile(ObjectKey("default", "s"))
    after = await client.get(MachineSet, "s", namespace="default")
    assert after.metadata.labels.get("freeze") == "True"
    assert [c.type for c in after.status.conditions] == ["Frozen"]
