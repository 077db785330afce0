"""MCM main's per-pool metrics and annotations: the create, initialize, join, drain and delete
duration gauges with MCM's labels, ``mcm_machine_num_failed_join`` (a series per pool from the
start), the ``machine-join-duration`` annotation, and a MachineDeployment's
``effective-creation-timeout`` reaching its machines through their MachineSet."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING
from kubetrio.controllers.machine.status import JOIN_DURATION_ANNOTATION
from kubetrio.emulator import Emulator
from kubetrio.runtime.util.duration import Duration
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    class_secret_doc,
    install_crds,
    machine_class_doc,
    machine_doc,
    machine_manager,
)
from tests.helpers.machinesets import machine_set_doc, machineset_manager

EFFECTIVE = "node.machine.sapcloud.io/effective-creation-timeout"
POOL = {
    "namespace": "default",
    "machine_deployment": "pool-a",
    "instance_type": "m5.large",
    "zone": "eu-1a",
}
ZONED = {"nodeTemplate": {"metadata": {"labels": {"topology.kubernetes.io/zone": "eu-1a"}}}}


def seed_typed_class(emu: Emulator, name: str = "small", **provider_spec: object) -> None:
    doc = machine_class_doc(name, **provider_spec)
    doc["nodeTemplate"] = {
        "instanceType": "m5.large",
        "region": "eu-1",
        "zone": "eu-1a",
        "capacity": {"cpu": "2", "gpu": "0", "memory": "8Gi"},
    }
    emu.create(class_secret_doc(name))
    emu.create(doc)


def sample(h: Harness, name: str, labels: dict[str, str] = POOL) -> float | None:
    return h.manager.registry.get_sample_value(name, labels)


async def test_durations_join_annotation_and_failed_joins_per_pool(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_typed_class(emu, bootSeconds=30)
    seed_typed_class(emu, "broken", neverReady=True)
    async with machine_manager(emu, creation_timeout=600) as h:
        emu.create(machine_doc("m-1", **ZONED))
        await h.wait_machine("m-1", lambda m: m is not None and bool(m.spec.provider_id))
        # Before any failure the pool's failed-join series is there, at 0.
        assert sample(h, "mcm_machine_num_failed_join") == 0
        running = await h.wait_machine(
            "m-1",
            lambda m: (
                m is not None
                and m.phase == PHASE_RUNNING
                and JOIN_DURATION_ANNOTATION in m.metadata.annotations
            ),
        )
        assert running is not None
        took = running.metadata.annotations[JOIN_DURATION_ANNOTATION]
        assert 28 <= Duration.parse(took) <= 35
        assert running.status.last_operation.description == (
            f"Machine m-1 successfully joined the cluster in {took}"
        )
        # Whole seconds since creation (the timestamp has whole seconds too).
        assert sample(h, "mcm_machine_create_duration_seconds") in (0.0, 1.0)
        assert 28 <= (sample(h, "mcm_machine_join_duration_seconds") or 0) <= 35
        assert sample(h, "mcm_machine_initialize_duration_seconds") == 0

        emu.create(machine_doc("m-2", machine_class="broken", **ZONED))
        await h.wait_phase("m-2", PHASE_FAILED)
        assert sample(h, "mcm_machine_num_failed_join") == 1

        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        drain = {"namespace": "default", "machine_deployment": "pool-a"}
        assert sample(h, "mcm_machine_drain_duration_seconds", drain) is not None
        assert sample(h, "mcm_machine_delete_duration_seconds") is not None


async def test_effective_creation_timeout_reaches_the_machines_of_a_set(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_typed_class(emu, neverReady=True)
    async with machineset_manager(emu, creation_timeout=3600) as s:
        doc = machine_set_doc("pool", 1)
        doc["metadata"]["annotations"] = {EFFECTIVE: "5m"}
        emu.create(doc)
        [machine] = await s.wait_machines(lambda ms: len(ms) == 1)
        assert machine.metadata.annotations[EFFECTIVE] == "5m"
        configuration = machine.spec.machine_configuration
        assert configuration is not None and configuration.creation_timeout == "5m"
        started = trio.current_time()
        failed = await s.h.wait_phase(machine.name, PHASE_FAILED)
        # Five minutes, not the flag's hour.
        assert trio.current_time() - started < 400
        assert failed.status.last_operation.description.startswith(
            f"Machine {machine.name} failed to join the cluster in 5 minutes."
        )
