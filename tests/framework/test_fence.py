"""The fence and what it guards, without a server: the check itself, the driver and storage
wrappers, and a controller meeting ``NotLeader`` (one line, key dropped, no retry)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.meta import ObjectMeta
from kubetrio.controllers.machine.driver.driver import CreateResult, SecretData, StatusResult
from kubetrio.controllers.machine.driver.fenced import FencedDriver
from kubetrio.controllers.storage.backend import StorageNode
from kubetrio.controllers.storage.fenced import FencedStorageBackend
from kubetrio.runtime.controller.controller import Controller, Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.leaderelection.fence import Fence, NotLeader, is_not_leader


class Switch:
    """A fence whose answer the test sets."""

    def __init__(self) -> None:
        self.held = True
        self.asked_at: list[float] = []

    def holds(self) -> bool:
        return self.held

    def holds_at(self, now: float) -> bool:
        self.asked_at.append(now)
        return self.held

    def fence(self) -> Fence:
        return Fence(self.holds, self.holds_at, lease="leader lease ns/name")


def test_the_check_names_the_action_and_the_lease() -> None:
    switch = Switch()
    fence = switch.fence()
    fence.check("PATCH /x")
    before = time.monotonic_ns()
    checked = fence.last_check("PATCH /x")
    assert before <= checked <= time.monotonic_ns()
    assert switch.asked_at == [checked / 1e9], "the instant returned is the one compared"
    switch.held = False
    with pytest.raises(NotLeader, match=r"^PATCH /x: refused, leader lease ns/name is not"):
        fence.check("PATCH /x")
    with pytest.raises(NotLeader):
        fence.last_check("PATCH /x")


def test_not_leader_is_recognised_inside_exception_groups() -> None:
    assert is_not_leader(NotLeader("x"))
    assert is_not_leader(
        ExceptionGroup("g", [NotLeader("a"), ExceptionGroup("h", [NotLeader("b")])])
    )
    assert not is_not_leader(ExceptionGroup("g", [NotLeader("a"), ValueError("b")]))
    assert not is_not_leader(ValueError("b"))


class RecordingDriver:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        self.calls.append("create")
        return CreateResult("id", "node")

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        self.calls.append("initialize")
        return StatusResult("id", "node")

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        self.calls.append("delete")
        return ""

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        self.calls.append("status")
        return StatusResult("id", "node")

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        self.calls.append("list")
        return {}

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        self.calls.append("volumes")
        return {}


async def test_the_driver_wrapper_refuses_vm_changes_and_lets_reads_pass() -> None:
    switch, inner = Switch(), RecordingDriver()
    driver = FencedDriver(inner, switch.fence())
    machine = Machine(metadata=ObjectMeta(name="m", namespace="ns"))
    cls = MachineClass(metadata=ObjectMeta(name="c", namespace="ns"))
    await driver.create_machine(machine, cls, {})
    switch.held = False
    with pytest.raises(NotLeader, match="CreateMachine ns/m"):
        await driver.create_machine(machine, cls, {})
    with pytest.raises(NotLeader, match="InitializeMachine ns/m"):
        await driver.initialize_machine(machine, cls, {})
    with pytest.raises(NotLeader, match="DeleteMachine ns/m"):
        await driver.delete_machine(machine, cls, {})
    await driver.get_machine_status(machine, cls, {})
    await driver.list_machines(cls, {})
    await driver.get_volume_ids([])
    assert inner.calls == ["create", "status", "list", "volumes"]


class RecordingBackend:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def list_nodes(self) -> list[StorageNode]:
        return [StorageNode(id="1", name="n")]

    async def delete_node(self, name: str) -> None:
        self.deleted.append(name)


async def test_the_storage_wrapper_refuses_deletes_and_lets_listing_pass() -> None:
    switch, inner = Switch(), RecordingBackend()
    backend = FencedStorageBackend(inner, switch.fence())
    await backend.delete_node("a")
    switch.held = False
    with pytest.raises(NotLeader, match="delete storage node b"):
        await backend.delete_node("b")
    assert [n.name for n in await backend.list_nodes()] == ["n"]
    assert inner.deleted == ["a"]


async def test_a_reconcile_meeting_not_leader_drops_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[ObjectKey] = []

    class Refused:
        async def reconcile(self, key: ObjectKey) -> Result:
            calls.append(key)
            raise NotLeader("PATCH /x: refused, leader lease ns/name is not proven held")

    registry = CollectorRegistry()
    controller: Controller[ObjectKey] = Controller("fenced", Refused(), registry=registry)
    key = ObjectKey("ns", "a")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(controller.run)
        controller.queue.add(key)
        await trio.testing.wait_all_tasks_blocked()
        controller.stop()
    assert calls == [key], "reconciled once, never retried"
    assert controller.queue.num_requeues(key) == 0 and len(controller.queue) == 0
    errors = registry.get_sample_value(
        "controller_runtime_reconcile_errors_total", {"controller": "fenced"}
    )
    assert not errors
    lines = [r.getMessage() for r in caplog.records if "not the leader" in r.getMessage()]
    assert len(lines) == 1 and "Traceback" not in caplog.text
