"""The orphan-VM sweep, the machine metrics as Prometheus reads them, and kubectl's view of
machines the controller manages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
import pytest
import trio
import trio.testing
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.machine import PHASE_RUNNING, Machine, MachineClass
from kubetrio.controllers.machine.status import FINALIZER
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.kube import Kubectl
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)

NO_CLASS = msgspec.convert({"metadata": {"name": "-"}}, MachineClass)


def ghost(name: str) -> Machine:
    return msgspec.convert({"metadata": {"name": name, "namespace": "default"}}, Machine)


async def make_vm(h: Harness, name: str) -> str:
    machine_class = h.ctx.classes.get("default", "small")
    assert isinstance(machine_class, MachineClass)
    created = await h.ctx.drivers.get("sim").create_machine(ghost(name), machine_class, {})
    return created.provider_id


@pytest.mark.slow
async def test_orphan_vms_are_deleted_and_machines_being_created_are_not(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    # A machine the controller will not touch (invalid), so its providerID stays empty: to the
    # sweep it is a machine still being created.
    emu.create(machine_doc("creating", machineConfiguration={"drainTimeout": "never"}))
    async with machine_manager(emu, safety_orphan_vms_period=900) as h:
        await running_machine(emu, h)
        orphan = await make_vm(h, "ghost")
        in_creation = await make_vm(h, "creating")
        kept = h.machine("m-1")
        assert kept is not None
        start = trio.current_time()
        await trio.sleep(900 - start % 900 + 1)  # the next sweep
        assert orphan not in emu.extension(SimulatedCloud).vms
        assert set(emu.extension(SimulatedCloud).vms) == {kept.spec.provider_id, in_creation}
        assert h.ctx.metrics.orphans_deleted._value.get() == 1


async def running_machine(emu: Emulator, h: Harness, name: str = "m-1") -> None:
    emu.create(machine_doc(name))
    await h.wait_phase(name, PHASE_RUNNING)


def scrape(h: Harness) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = generate_latest(h.manager.registry).decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


async def test_metrics_show_phases_conditions_driver_calls_and_durations(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=40, failNext={"create": {"code": "Unavailable", "count": 1}})
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        samples = scrape(h)
        phase = {s[0]["name"]: s[1] for s in samples["mcm_machine_current_status_phase"]}
        assert phase == {"m-1": 1.0}
        info = samples["mcm_machine_info"][0][0]
        assert info["spec_class_name"] == "small" and info["node_name"] == "m-1"
        assert info["spec_provider_id"].startswith("sim://")
        ready = [
            v
            for labels, v in samples["mcm_machine_status_condition"]
            if labels["condition"] == "Ready"
        ]
        assert ready == [1.0]
        assert samples["mcm_machine_items_total"] == [({}, 1.0)]
        failed = {
            (labels["operation"], labels["error_code"]): v
            for labels, v in samples["mcm_cloud_api_driver_requests_failed_total"]
        }
        assert failed == {("CreateMachine", "Unavailable"): 1.0}
        calls = {
            labels["operation"]: v
            for labels, v in samples["mcm_cloud_api_driver_request_duration_seconds_count"]
        }
        assert calls["CreateMachine"] == 2 and calls["GetMachineStatus"] >= 2
        join = samples["kubetrio_machine_join_duration_seconds_sum"][0][1]
        assert 44 <= join <= 47  # the create retry (ShortRetry) plus the 40 s boot
        emu.delete("machine.sapcloud.io/v1alpha1", "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        # The cache can see the machine gone before the reconcile that removed the finalizer
        # has its response back and records the duration. A histogram has no change event to
        # wait on, so look again on the mock clock, bounded.
        with trio.fail_after(30):
            done = [({}, 1.0)]
            while scrape(h)["kubetrio_machine_delete_duration_seconds_count"] != done:  # noqa: ASYNC110
                await trio.sleep(0.05)
        samples = scrape(h)
        assert samples["kubetrio_machine_drain_duration_seconds_count"] == [({}, 1.0)]
        assert "mcm_machine_current_status_phase" not in samples  # the series went with it
        text = generate_latest(h.manager.registry).decode()
        assert "kubeadm" not in text and "BOOTSTRAP" not in text  # no user data anywhere


@pytest.mark.slow
@pytest.mark.kubectl
async def test_kubectl_sees_machines_with_their_phase(emu: Emulator, kubectl: Kubectl) -> None:
    # Real clock: kubectl is a real process, and a mock clock would jump while it runs.
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        await running_machine(emu, h)
        table = await kubectl.out("get", "machines", "-n", "default")
        assert "m-1" in table and "Running" in table
        listed = await kubectl.json("get", "machines", "-n", "default")
        machine = listed["items"][0]
        assert machine["status"]["currentStatus"]["phase"] == "Running"
        assert "machine.sapcloud.io/machine-controller-manager" in machine["metadata"]["finalizers"]
        await kubectl.out("label", "machine", "m-1", "-n", "default", "force-deletion=true")
        await kubectl.out("delete", "machine", "m-1", "-n", "default", "--wait=false")
        await h.wait_gone("m-1")


async def test_a_class_in_use_outlives_its_machines(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        classes = InformerChanges.of(h.manager.cache.informer(MachineClass, namespace="default"))

        def small() -> MachineClass | None:
            return h.ctx.classes.get("default", "small")

        def until(condition: Callable[[], bool]) -> Awaitable[bool]:
            return classes.wait_until(condition, trio.current_time() + 60)

        await running_machine(emu, h)
        assert await until(lambda: FINALIZER in (small() or NO_CLASS).metadata.finalizers)
        emu.delete(MACHINE_API, "MachineClass", "small", "default")
        assert await until(lambda: (small() or NO_CLASS).deleting)
        await trio.sleep(60)
        assert small() is not None  # kept while m-1 needs it
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")  # the deletion flow still had its class
        assert emu.extension(SimulatedCloud).vms == {}
        assert await until(lambda: small() is None)
