"""The machine controller end to end: machines are created at the simulated cloud, join,
report health, and are deleted through MCM's deletion flow — all through the API."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import Secret
from kubetrio.api.machine import (
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_RUNNING,
)
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.status import FINALIZER, PRIORITY_ANNOTATION
from kubetrio.emulator import Emulator
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    class_secret_doc,
    install_crds,
    machine_class_doc,
    machine_doc,
    machine_manager,
    seed_class,
)


async def test_machine_is_created_joins_and_is_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=30)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        pending = await h.wait_phase("m-1", PHASE_PENDING)
        created_at = trio.current_time()
        assert FINALIZER in pending.metadata.finalizers
        assert pending.metadata.labels["node"] == "m-1"
        assert pending.metadata.annotations[PRIORITY_ANNOTATION] == "3"
        assert pending.spec.provider_id.startswith("sim://eu-1/")
        assert pending.status.last_operation.description == "Creating machine on cloud provider"
        token = await h.client.get(
            Secret, token_secret_name("m-1", "default"), namespace=TOKEN_NAMESPACE
        )
        assert token.type == "bootstrap.kubernetes.io/token"

        running = await h.wait_phase("m-1", PHASE_RUNNING)
        assert 29 <= trio.current_time() - created_at <= 32  # the VM's boot time, not a poll
        assert running.status.last_operation.description.startswith(
            "Machine m-1 successfully joined the cluster in "
        )
        assert running.condition("Ready") is not None
        assert await h.client.get_or_none(Secret, token.name, namespace=TOKEN_NAMESPACE) is None

        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert h.node("m-1") is None or h.node("m-1").deleting
        vms = await h.ctx.drivers.get("sim").list_machines(
            h.ctx.classes.get("default", "small"), {}
        )
        assert vms == {}


async def crash_then_pending(h: Harness, name: str) -> float:
    """Seconds between the machine entering CrashLoopBackOff and leaving it for Pending."""
    await h.wait_phase(name, PHASE_CRASH_LOOP_BACK_OFF)
    crashed = trio.current_time()
    await h.wait_phase(name, PHASE_PENDING)
    return trio.current_time() - crashed


async def test_transient_create_error_retries_after_short_retry(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, failNext={"create": {"code": "Unavailable", "count": 1}})
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        crashed = await h.wait_phase("m-1", PHASE_CRASH_LOOP_BACK_OFF)
        last = crashed.status.last_operation
        assert last.description.startswith("Cloud provider message - machine codes error: ")
        assert last.error_code == "Unavailable" and last.state == "Failed"
        started = trio.current_time()
        await h.wait_phase("m-1", PHASE_PENDING)
        assert 4.5 <= trio.current_time() - started <= 6  # ShortRetry, not an immediate loop
        assert h.machine("m-1").status.last_operation.error_code == ""  # type: ignore[union-attr]


async def test_permanent_create_error_retries_after_medium_retry(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, failNext={"create": {"code": "InvalidArgument", "count": 1}})
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        assert 179 <= await crash_then_pending(h, "m-1") <= 181


@pytest.mark.parametrize(("configured", "expected"), [(None, 600.0), (60.0, 60.0)])
async def test_an_exhausted_provider_is_asked_again_after_resource_exhausted_retry(
    emu: Emulator, mock_clock: trio.testing.MockClock, configured: float | None, expected: float
) -> None:
    """MCM's --resource-exhausted-retry (LongRetry by default): out of capacity is not a
    creation to try again at the pace of any other failure."""
    install_crds(emu)
    seed_class(emu, failNext={"create": {"code": "ResourceExhausted", "count": 1}})
    options = {} if configured is None else {"resource_exhausted_retry": configured}
    async with machine_manager(emu, **options) as h:
        emu.create(machine_doc("m-1"))
        assert expected - 1 <= await crash_then_pending(h, "m-1") <= expected + 1


@pytest.mark.slow
async def test_create_failing_past_the_creation_timeout_fails_the_machine(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, failNext={"create": {"code": "Internal", "count": 100}})
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_CRASH_LOOP_BACK_OFF)
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert failed.status.last_operation.error_code == "Internal"
        # MediumRetry attempts: the first one after 20 minutes finds the machine too old.
        assert 20 * 60 <= trio.current_time() <= 20 * 60 + 181


@pytest.mark.slow
async def test_node_that_never_gets_ready_fails_after_the_creation_timeout(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, neverReady=True)
    async with machine_manager(emu, creation_timeout=600) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_PENDING)
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert 600 <= trio.current_time() <= 603  # on time, not up to a minute late
        assert failed.status.last_operation.description == (
            "Machine m-1 failed to join the cluster in 10 minutes."
        )


async def test_vm_registering_under_an_existing_node_fails_the_machine(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    emu.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "old-node"}})
    # The VM boots after 30 s, as real ones take a while: with an instant boot its kubelet could
    # take the old Node over before the create call has even answered (a race no cloud has).
    seed_class(emu, nodeName="old-node", bootSeconds=30)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert failed.status.last_operation.description == "VM using old node obj"
        vms = await h.ctx.drivers.get("sim").list_machines(
            h.ctx.classes.get("default", "small"), {}
        )  # type: ignore[arg-type]
        assert vms == {}  # the VM was deleted again
        assert "node" not in failed.metadata.labels


async def test_missing_class_is_reported_and_picked_up_when_it_appears(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1", machine_class="later"))
        waiting = await h.wait_machine(
            "m-1", lambda m: m is not None and "not found" in m.status.last_operation.description
        )
        assert waiting is not None
        assert waiting.status.last_operation.description == (
            'MachineClass "later" not found in namespace "default"'
        )
        started = trio.current_time()
        seed_class(emu, "later")
        await h.wait_phase("m-1", PHASE_PENDING)
        assert trio.current_time() - started < 1  # the class's arrival, not a 10 min retry


async def test_invalid_machine_and_class_name_the_field(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    emu.create(class_secret_doc("bad"))
    bad_class = machine_class_doc("bad")
    bad_class["nodeTemplate"] = {  # MCM's: no gpu capacity, an empty zone
        "capacity": {"cpu": "2", "memory": "8Gi"},
        "instanceType": "sim.large",
        "region": "eu-1",
        "zone": "",
    }
    emu.create(bad_class)
    seed_class(emu)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1", machineConfiguration={"drainTimeout": "soon"}))
        emu.create(machine_doc("m-2", machine_class="bad"))
        one = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        two = await h.wait_machine(
            "m-2", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert one is not None and two is not None
        assert one.status.last_operation.description == (
            'spec.machineConfiguration.drainTimeout: invalid duration "soon"'
        )
        assert two.status.last_operation.description == (
            'MachineClass "bad": [MachineClass NodeTemplate Capacity should mandatorily have '
            "CPU, GPU and Memory configured MachineClass NodeTemplate Instance Type, region and "
            "zone cannot be empty]"
        )
        assert one.phase == "" and two.phase == ""  # nothing was created


@pytest.mark.parametrize(
    ("secret", "secret_ref", "why"),
    [
        (
            True,
            True,
            'Secret "default/small-secret" named by MachineClass "default/small" (secretRef) '
            "has no userData key",
        ),
        (
            False,
            True,
            'Secret "default/small-secret" named by MachineClass "default/small" (secretRef) '
            "does not exist",
        ),
        (False, False, 'MachineClass "default/small" has no secretRef'),
    ],
    ids=["no-key", "no-secret", "no-secret-ref"],
)
async def test_missing_user_data_is_reported(
    emu: Emulator, mock_clock: trio.testing.MockClock, secret: bool, secret_ref: bool, why: str
) -> None:
    """MCM's sentence, then which of the class, its reference or its Secret is wrong."""
    install_crds(emu)
    if secret:
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "small-secret", "namespace": "default"},
                "data": {},
            }
        )
    machine_class = machine_class_doc("small")
    if not secret_ref:
        del machine_class["secretRef"]
    emu.create(machine_class)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        machine = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert machine is not None
        assert machine.status.last_operation.description == (
            f'Userdata field not found in secret for machine "m-1": {why}'
        )


@pytest.mark.slow
async def test_uninitialized_vm_is_initialized(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, needsInitialization=True)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_RUNNING)
        vm = next(iter(emu.extension(SimulatedCloud).vms.values()))
        assert vm.initialized


@pytest.mark.slow
async def test_a_machine_never_takes_over_or_deletes_another_vms_node(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Even when the provider fails to delete the VM that would register under a leftover
    node, the machine is Failed, never adopts that node, and its deletion leaves it alone."""
    install_crds(emu)
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "old-node"},
            "spec": {"providerID": "sim://eu-1/vm-elsewhere"},
        }
    )
    seed_class(
        emu,
        bootSeconds=30,  # the cloud would re-register the old node as this VM's at boot
        nodeName="old-node",
        failNext={"delete": {"code": "Unavailable", "count": 1}},
    )
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert failed.status.last_operation.description == "VM using old node obj"
        await trio.sleep(60)  # later passes must not adopt it either
        machine = h.machine("m-1")
        assert machine is not None and "node" not in machine.metadata.labels
        assert machine.phase == PHASE_FAILED
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert emu.get("v1", "Node", "old-node") is not None
        assert emu.extension(SimulatedCloud).vms == {}  # its VM went with it
