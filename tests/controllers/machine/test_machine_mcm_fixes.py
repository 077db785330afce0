"""Defects found by running the machine controller against MCM's behaviour, each reproduced
end to end (emulator, simulated cloud, mock clock) before it was fixed."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.machine import (
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_RUNNING,
    PHASE_TERMINATING,
    MachineClass,
)
from kubetrio.controllers.machine import status
from kubetrio.controllers.machine.status import GET_VM_STATUS, deletion_step
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cloud.script import Failure
from tests.helpers.machines import (
    MACHINE_API,
    class_secret_doc,
    event_messages,
    event_reasons,
    install_crds,
    machine_class_doc,
    machine_doc,
    machine_manager,
    seed_class,
)

CLASS = "default/small"
REFRESH_AFTER = 5 * 60.0


async def test_machine_deleted_while_its_create_call_is_in_flight_takes_its_node_along(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The create call answers after the deletion began: creation's write of the node label
    and providerID conflicts, so the deletion starts without them. It must learn the node
    from the provider, drain it and delete it, not leave it behind for ever."""
    install_crds(emu)
    seed_class(emu, createSeconds=60)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        # The VM is up and its Node registered while the create call has not answered yet.
        await h.wait_node("m-1", lambda n: n is not None)
        creating = h.machine("m-1")
        assert creating is not None and not creating.spec.provider_id
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert emu.get("v1", "Node", "m-1") is None
        assert emu.extension(SimulatedCloud).vms == {}
        reasons = await event_reasons(h, "m-1")
        assert reasons[-4:] == ["Terminating", "Drained", "VMDeleted", "NodeDeleted"]


@pytest.mark.slow
async def test_initialize_failing_for_ever_crash_loops_then_fails(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM master: an InitializeMachine error puts the machine in CrashLoopBackOff (Failed once
    the creation timeout has passed since its creation), retried after ShortRetry."""
    install_crds(emu)
    seed_class(
        emu,
        needsInitialization=True,
        failNext={"initialize": {"code": "Internal", "count": 10**6, "message": "no NIC"}},
    )
    async with machine_manager(emu, creation_timeout=600) as h:
        emu.create(machine_doc("m-1"))
        looping = await h.wait_phase("m-1", PHASE_CRASH_LOOP_BACK_OFF)
        last = looping.status.last_operation
        assert last.description == (
            "Provider error: machine codes error: code = [Internal] message = [no NIC]. "
            "Initialize VM Instance"
        )
        assert (last.state, last.type, last.error_code) == ("Failed", "Create", "Internal")
        assert looping.metadata.labels["node"] == "m-1" and looping.spec.provider_id
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert 600 <= trio.current_time() <= 600 + 5 + 2  # on the first retry past the timeout
        assert failed.status.last_operation.description == last.description
        assert not failed.status.current_status.timeout_active


@pytest.mark.parametrize(("code", "retry"), [("Unavailable", 5), ("PermissionDenied", 180)])
async def test_provider_errors_while_learning_the_node_hold_the_step_and_retry(
    emu: Emulator, mock_clock: trio.testing.MockClock, code: str, retry: float
) -> None:
    """Only a machine without a node label asks the provider at this step (MCM master)."""
    install_crds(emu)
    seed_class(emu, failNext={"create": {"code": "Internal", "count": 10**6}})
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_CRASH_LOOP_BACK_OFF)
        emu.extension(SimulatedCloud).script(CLASS, "status", Failure(code=code, count=1))
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        held = await h.wait_machine(
            "m-1",
            lambda m: (
                m is not None
                and m.phase == PHASE_TERMINATING
                and m.status.last_operation.state == "Failed"
            ),
        )
        assert held is not None
        started = trio.current_time()
        assert deletion_step(held.status.last_operation.description) == GET_VM_STATUS
        assert held.status.last_operation.error_code == code
        await h.wait_gone("m-1")
        assert retry - 1.5 <= trio.current_time() - started <= retry + 1


@pytest.mark.slow
async def test_provider_errors_differing_only_in_request_ids_are_written_once(
    emu: Emulator, mock_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MCM treats descriptions more than 0.75 alike as equal: a create failing every 5 s with a
    fresh request id is one status write and one Event, refreshed once ``REFRESH_AFTER`` has
    passed (no Event). The refresh age is cut from MCM's 30 min (pinned by a unit test) to
    5 min: every 5 s retry costs real time here, and 60 retries prove the rule as 360 do."""
    monkeypatch.setattr(status, "REFRESH_AFTER", REFRESH_AFTER)
    install_crds(emu)
    message = "instance quota exceeded in region eu-1 (request id {requestId})"
    seed_class(
        emu, failNext={"create": {"code": "Unavailable", "count": 10**6, "message": message}}
    )
    async with machine_manager(emu, creation_timeout=3 * 3600) as h:
        emu.create(machine_doc("m-1"))
        first = await h.wait_phase("m-1", PHASE_CRASH_LOOP_BACK_OFF)
        started = trio.current_time()
        written = first.status.last_operation
        assert "quota exceeded" in written.description
        refreshed = await h.wait_machine(
            "m-1",
            lambda m: (
                m is not None
                and m.status.last_operation.last_update_time != written.last_update_time
            ),
        )
        assert refreshed is not None
        assert REFRESH_AFTER <= trio.current_time() - started <= REFRESH_AFTER + 5 + 2
        assert refreshed.status.last_operation.description != written.description  # a new id
        attempts = h.manager.registry.get_sample_value(
            "mcm_cloud_api_driver_requests_failed_total",
            {"provider": "sim", "operation": "CreateMachine", "error_code": "Unavailable"},
        )
        # Retried every ShortRetry all along (60 in 5 min).
        assert attempts is not None and attempts > 50
        assert (await event_reasons(h, "m-1")).count("CreateFailed") == 1


@pytest.mark.slow
async def test_names_in_descriptions_are_quoted_as_go_s_percent_q(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM writes names with ``%q``; tools that match its texts need the double quotes."""
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        for name in ("m-1", "m-2"):
            emu.create(machine_doc(name))
            await h.wait_phase(name, PHASE_RUNNING)
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        emu.delete("v1", "Node", "m-2")
        await h.wait_node("m-2", lambda n: n is None)
        emu.delete(MACHINE_API, "Machine", "m-2", "default")
        await h.wait_gone("m-1")
        await h.wait_gone("m-2")
        messages = (await event_messages(h, "m-1")).splitlines()
        assert (
            'Deletion of Node Object "m-1" is successful. '
            "Initiate machine object finalizer removal" in messages
        )
        messages = (await event_messages(h, "m-2")).splitlines()
        assert (
            'No node object found for "m-2", continuing deletion flow. '
            "Initiate machine object finalizer removal" in messages
        )


TEMPLATE = {
    "capacity": {"cpu": "8", "gpu": 1, "memory": "32Gi"},
    "instanceType": "sim.gpu.large",
    "region": "eu-1",
    "zone": "eu-1b",
    "architecture": "arm64",
}


async def test_class_node_template_is_validated_and_shapes_the_vm(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's MachineClass ``nodeTemplate``: an incomplete one creates no VM and says MCM's
    error on the machine; a complete one reaches the driver, whose VM's Node is what the
    template promises."""
    install_crds(emu)
    emu.create(class_secret_doc("small"))
    incomplete = machine_class_doc("small")
    incomplete["nodeTemplate"] = {**TEMPLATE, "capacity": {"cpu": "8", "memory": "32Gi"}}
    emu.create(incomplete)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        refused = await h.wait_machine(
            "m-1", lambda m: m is not None and m.status.last_operation.state == "Failed"
        )
        assert refused is not None
        assert refused.status.last_operation.description == (
            'MachineClass "small": [MachineClass NodeTemplate Capacity should mandatorily have '
            "CPU, GPU and Memory configured]"
        )
        assert emu.extension(SimulatedCloud).vms == {} and refused.phase == ""
        fixed = emu.get(MACHINE_API, "MachineClass", "small", "default")
        assert fixed is not None
        fixed["nodeTemplate"] = TEMPLATE
        emu.update(fixed)
        await h.wait_phase("m-1", PHASE_RUNNING)
        node = h.node("m-1")
        assert node is not None
        labels = node.metadata.labels
        assert labels["node.kubernetes.io/instance-type"] == "sim.gpu.large"
        assert labels["topology.kubernetes.io/zone"] == "eu-1b"
        assert labels["kubernetes.io/arch"] == "arm64"
        capacity = node.status.capacity
        assert (capacity["cpu"], capacity["memory"], capacity["nvidia.com/gpu"]) == (
            "8",
            "32Gi",
            "1",
        )


async def test_the_crd_requires_mcm_s_node_template_fields(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    client = Client.from_url(emu.url, token=emu.token)
    doc = machine_class_doc("small")
    doc["nodeTemplate"] = {key: v for key, v in TEMPLATE.items() if key != "zone"}
    with pytest.raises(ApiError) as info:
        await client.create(MachineClass, doc)
    assert info.value.status == 422 and "zone" in info.value.message
