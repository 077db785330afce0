"""The MachineSet controller end to end on the emulator (MockClock), with the machine
controller booting real simulated VMs: scale up and down (also with kubectl scale), Failed
machines replaced, adoption and release, deletion priority, expectations under a slow watch,
and the set's deletion taking its machines along."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.api.core import Event
from kubetrio.api.machine import PHASE_RUNNING, Machine, MachineClass
from kubetrio.api.machineset import MACHINE_PRIORITY_ANNOTATION, MachineSet
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util.inflight import request_in_flight
from tests.helpers.kube import kubectl_of
from tests.helpers.machines import install_crds, machine_doc, seed_class
from tests.helpers.machinesets import machine_set_doc, machineset_manager


async def events_of(client: Client, name: str) -> list[tuple[str, str]]:
    events = await client.list(Event, namespace="default")
    return [
        (e.reason, e.message)
        for e in events.items
        if e.involved_object.kind == "MachineSet" and e.involved_object.name == name
    ]


@pytest.mark.kubectl
@pytest.mark.slow
async def test_scale_up_and_down(
    emu: Emulator, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=20)
    async with machineset_manager(emu) as s:
        emu.create(machine_set_doc("pool", 3))
        ms = await s.wait_ready("pool", 3)
        assert ms.status.available_replicas == 3 and ms.status.fully_labeled_replicas == 3
        assert ms.metadata.finalizers == ("machine.sapcloud.io/machine-controller-manager",)
        machines = s.machines_of("pool")
        assert len(machines) == 3
        for m in machines:
            assert m.name.startswith("pool-")
            assert m.metadata.labels["set"] == "pool"
            ref = m.metadata.controller_ref()
            assert ref is not None and ref.kind == "MachineSet" and ref.block_owner_deletion
            assert m.spec.class_.name == "small"
            assert m.spec.node_template is not None
            assert m.spec.node_template.metadata.labels == {"pool": "pool"}
            assert m.phase == PHASE_RUNNING
        created = [r for r, _ in await events_of(s.h.client, "pool") if r == "SuccessfulCreate"]
        assert len(created) == 3

        kubectl = kubectl_of("1.33", emu, tmp_path)
        with request_in_flight():  # kubectl's requests hold the mock clock as ours do
            await kubectl.out("scale", "machineset/pool", "--replicas=5", "-n", "default")
        ms = await s.wait_ready("pool", 5)
        assert len(s.machines_of("pool")) == 5

        await s.h.client.patch(MachineSet, "pool", {"spec": {"replicas": 2}}, namespace="default")
        ms = await s.wait_ready("pool", 2)
        await s.wait_machines(lambda ms: len(ms) == 2)
        assert len(s.machines_of("pool")) == 2
        deleted = [r for r, _ in await events_of(s.h.client, "pool") if r == "SuccessfulDelete"]
        assert len(deleted) == 3
        assert emu.counters.get("create", "machines") == 5  # never one too many


@pytest.mark.slow
async def test_failed_machine_is_replaced(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    # Every VM of this class turns NotReady 100 s after boot: Unknown, then Failed 10 min later.
    seed_class(
        emu,
        bootSeconds=10,
        conditionAfter=[{"type": "Ready", "status": "False", "afterSeconds": 100}],
    )
    async with machineset_manager(emu) as s:
        emu.create(machine_set_doc("pool", 1))
        await s.wait_ready("pool", 1)
        (first,) = s.machines_of("pool")
        # Replacements from now on stay healthy.
        await s.h.client.patch(
            MachineClass, "small", {"providerSpec": {"conditionAfter": None}}, namespace="default"
        )
        ms = await s.wait_set(
            "pool",
            lambda ms: ms is not None and bool(ms.status.failed_machines),
            within=3600,
        )
        assert ms is not None and ms.status.failed_machines is not None
        assert ms.status.failed_machines[0].name == first.name
        summary = {
            "name": "pool",
            "namespace": "default",
            "failed_machine_name": first.name,
            "failed_machine_provider_id": first.spec.provider_id,
            "failed_machine_owner_ref": "pool",
            "failed_machine_last_operation_state": "Failed",
            "failed_machine_last_operation_machine_operation_type": "HealthCheck",
        }
        assert (
            s.h.manager.registry.get_sample_value("mcm_machine_set_failed_machines", summary) == 1
        )
        await s.h.wait_gone(first.name)
        await s.wait_ready("pool", 1)
        (replacement,) = s.machines_of("pool")
        assert replacement.name != first.name
        ms = s.machine_set("pool")
        assert ms is not None and not ms.status.failed_machines
        registry = s.h.manager.registry
        assert registry.get_sample_value("mcm_machine_stale_machines_total") == 1
        assert registry.get_sample_value("mcm_machine_set_items_total") == 1
        labels = {"name": "pool", "namespace": "default"}
        assert registry.get_sample_value("mcm_machine_set_status_ready_replicas", labels) == 1
        # MCM's createdAt is the creation time in Unix seconds.
        created = dt.datetime.fromisoformat(str(ms.metadata.creation_timestamp))
        info = {
            **labels,
            "createdAt": str(int(created.timestamp())),
            "spec_machine_class_api_group": "",
            "spec_machine_class_kind": ms.spec.template.spec.class_.kind,
            "spec_machine_class_name": ms.spec.template.spec.class_.name,
        }
        assert registry.get_sample_value("mcm_machine_set_info", info) == 1


def owner_uid(machine: Machine | None) -> str | None:
    ref = machine.metadata.controller_ref() if machine is not None else None
    return ref.uid if ref is not None else None


@pytest.mark.slow
async def test_adopts_matching_orphans_and_releases_machines_that_stop_matching(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=10)
    owner = emu.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    )
    orphan = machine_doc("orphan-1")
    orphan["metadata"]["labels"] = {"set": "pool", "name": "pool"}
    emu.create(orphan)
    # Matching, but controlled by someone else: never taken.
    foreign = machine_doc("foreign-1")
    foreign["metadata"]["labels"] = {"set": "pool"}
    foreign["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "x",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    emu.create(foreign)
    async with machineset_manager(emu) as s:
        emu.create(machine_set_doc("pool", 2))
        ms = await s.wait_ready("pool", 2)
        names = sorted(m.name for m in s.machines_of("pool"))
        assert "orphan-1" in names and "foreign-1" not in names
        assert emu.counters.get("create", "machines") == 1  # the orphan counts as one
        assert owner_uid(s.h.machine("foreign-1")) == owner["metadata"]["uid"]

        # A machine whose labels stop matching is released, not deleted, and replaced.
        await s.h.client.patch(
            Machine, "orphan-1", {"metadata": {"labels": {"set": "elsewhere"}}}, namespace="default"
        )
        await s.h.wait_machine("orphan-1", lambda m: m is not None and owner_uid(m) is None)
        await s.wait_machines(
            lambda _: (
                len(owned := s.machines_of("pool")) == 2
                and all(m.phase == PHASE_RUNNING for m in owned)
            )
        )
        assert "orphan-1" not in [m.name for m in s.machines_of("pool")]
        assert emu.counters.get("create", "machines") == 2
        released = s.h.machine("orphan-1")
        assert released is not None and not released.deleting
        assert ms.metadata.uid == s.machine_set("pool").metadata.uid  # type: ignore[union-attr]


@pytest.mark.slow
async def test_scale_down_deletes_by_priority_then_by_phase(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=300)
    async with machineset_manager(emu) as s:
        emu.create(machine_set_doc("pool", 3))
        await s.wait_ready("pool", 3)
        chosen = sorted(m.name for m in s.machines_of("pool"))[1]
        await s.h.client.patch(
            Machine,
            chosen,
            {"metadata": {"annotations": {MACHINE_PRIORITY_ANNOTATION: "1"}}},
            namespace="default",
        )
        await s.h.wait_machine(
            chosen,
            lambda m: (
                m is not None and m.metadata.annotations.get(MACHINE_PRIORITY_ANNOTATION) == "1"
            ),
        )
        await s.h.client.patch(MachineSet, "pool", {"spec": {"replicas": 2}}, namespace="default")
        await s.h.wait_gone(chosen)
        await s.wait_ready("pool", 2)
        running = {m.name for m in s.machines_of("pool")}

        # A machine still booting goes before Running ones (same priority).
        await s.h.client.patch(MachineSet, "pool", {"spec": {"replicas": 3}}, namespace="default")
        (booting,) = [
            m.name for m in await s.wait_machines(lambda ms: len(ms) == 3) if m.name not in running
        ]
        assert s.h.machine(booting).phase != PHASE_RUNNING  # type: ignore[union-attr]
        await s.h.client.patch(MachineSet, "pool", {"spec": {"replicas": 2}}, namespace="default")
        await s.h.wait_gone(booting)
        await s.wait_ready("pool", 2)
        assert {m.name for m in s.machines_of("pool")} == running


@pytest.mark.slow
async def test_slow_watch_never_makes_more_machines_than_replicas(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=10)
    async with machineset_manager(emu) as s:
        await s.h.manager.cache.wait_for_sync()
        # From now on the machine watch reconnects only after 120 s: the cache shows no new
        # machine for two minutes while the set's own watch (and status writes) keep waking it.
        emu.faults.add(verb="watch", resource="machines", latency=120)
        emu.faults.cut_watches()
        emu.create(machine_set_doc("pool", 3))
        await s.wait_set("pool", lambda ms: ms is not None and ms.status.observed_generation == 1)
        for _ in range(5):
            await s.h.client.patch(
                MachineSet,
                "pool",
                {"metadata": {"labels": {"poke": str(trio.current_time())}}},
                namespace="default",
            )
            await trio.sleep(5)
        assert s.sets.expectations.pending(ObjectKey("default", "pool")) == (3, 0)
        await s.wait_ready("pool", 3)
        emu.faults.clear()
        assert emu.counters.get("create", "machines") == 3
        assert (
            len(
                emu.store.list_entries(
                    emu.resource("machines", "machine.sapcloud.io"), "default", None
                ).entries
            )
            == 3
        )


@pytest.mark.slow
async def test_deleting_a_set_deletes_its_machines_and_adopts_nothing_meanwhile(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=10)
    async with machineset_manager(emu) as s:
        held = machine_set_doc("bg", 2)
        held["metadata"]["finalizers"] = ["example.com/hold"]  # keeps it Terminating for a while
        emu.create(held)
        emu.create(machine_set_doc("fg", 2))
        await s.wait_ready("bg", 2)
        await s.wait_ready("fg", 2)
        await s.h.client.delete(MachineSet, "bg", namespace="default")
        await s.h.client.delete(
            MachineSet, "fg", namespace="default", propagation_policy="Foreground"
        )
        await s.wait_set("fg", lambda ms: ms is None)
        await s.wait_machines(lambda ms: ms == [])
        # Its machines gone, the set lets go of its finalizer; only the foreign one holds it.
        ms = await s.wait_set(
            "bg", lambda ms: ms is not None and ms.metadata.finalizers == ("example.com/hold",)
        )
        assert ms is not None and ms.deleting

        # A matching orphan created while the set is being deleted is never adopted.
        late = machine_doc("late-1")
        late["metadata"]["labels"] = {"set": "bg"}
        emu.create(late)
        await s.h.wait_machine("late-1", lambda m: m is not None)
        await s.h.client.patch(
            MachineSet, "bg", {"metadata": {"labels": {"poke": "1"}}}, namespace="default"
        )
        await s.wait_set("bg", lambda ms: ms is not None and "poke" in ms.metadata.labels)
        await trio.sleep(30)
        assert owner_uid(s.h.machine("late-1")) is None
        await s.h.client.patch(
            MachineSet, "bg", {"metadata": {"finalizers": None}}, namespace="default"
        )
        await s.wait_set("bg", lambda ms: ms is None)


async def test_an_invalid_set_creates_nothing_and_others_carry_on(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=10)
    async with machineset_manager(emu) as s:
        bad = machine_set_doc("bad", 2)
        bad["spec"]["selector"] = {"matchLabels": {"set": "other"}}  # not the template's labels
        emu.create(bad)
        emu.create(machine_set_doc("good", 1))
        await s.wait_ready("good", 1)
        assert s.machines_of("bad") == []
        ms = s.machine_set("bad")
        assert ms is not None and ms.status.observed_generation == 0
