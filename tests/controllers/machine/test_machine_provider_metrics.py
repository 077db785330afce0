"""MCM's cloud API metrics (``mcm_cloud_api_requests_total``, ``…_requests_failed_total``,
``…_api_request_duration_seconds``) recorded by the ``sim`` driver around each request to the
simulated cloud, and ``mcm_misc_scrape_failure_total``, as a manager exposes them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.machine import PHASE_RUNNING, Machine, MachineClass
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.driver import MachineError
from kubetrio.controllers.machine.driver.sim import SimDriver
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.provider_metrics import BINARY, ProviderMetrics
from kubetrio.controllers.machine.setup import MachineContext, setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.testing import eventually, run_manager
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)
from tests.helpers.manager import http_get

SIM = {"provider": "sim", "service": "compute"}


def machine_class(**spec: Any) -> MachineClass:
    return msgspec.convert(
        {
            "metadata": {"name": "small", "namespace": "default"},
            "provider": "sim",
            "providerSpec": {"region": "eu-1", **spec},
        },
        MachineClass,
    )


def machine(name: str) -> Machine:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"class": {"name": "small"}}},
        Machine,
    )


async def test_every_cloud_request_is_counted_and_failures_are_not_timed(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    registry = CollectorRegistry()
    driver = SimDriver(emu.extension(SimulatedCloud).url, metrics=ProviderMetrics(registry))
    cls = machine_class(failNext={"create": {"code": "ResourceExhausted", "count": 1}})
    with pytest.raises(MachineError):
        await driver.create_machine(machine("m-1"), cls, {})
    await driver.create_machine(machine("m-1"), cls, {})
    await driver.get_machine_status(machine("m-1"), cls, {})
    with pytest.raises(MachineError):
        await driver.get_machine_status(machine("nothing"), cls, {})
    await driver.get_volume_ids([])  # answered by the driver alone: no cloud request

    def value(name: str) -> float | None:
        return registry.get_sample_value(name, SIM)

    assert value("mcm_cloud_api_requests_total") == 4
    assert value("mcm_cloud_api_requests_failed_total") == 2
    assert value("mcm_cloud_api_api_request_duration_seconds_count") == 2  # successes only
    text = generate_latest(registry).decode()
    buckets = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("mcm_cloud_api_api_request_duration_seconds_bucket")
    ]
    # Go's prometheus.DefBuckets, as MCM's histogram has no buckets of its own.
    assert buckets == [
        "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf"
    ]  # fmt: skip


async def test_a_manager_exports_them_under_mcm_s_names(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_RUNNING)
        registry = h.manager.registry
        requests = registry.get_sample_value("mcm_cloud_api_requests_total", SIM)
        assert requests is not None and requests >= 3  # status, create, initialize at least
        failures = registry.get_sample_value(
            "mcm_misc_scrape_failure_total", {"binary": BINARY, "kind": "Machine-count"}
        )
        assert failures == 0
        assert registry.get_sample_value("mcm_machine_items_total") == 1


async def test_per_machine_series_can_be_turned_off(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """``metricsPerMachine: false``: the count stays, the three per-machine families go."""
    install_crds(emu)
    seed_class(emu)
    for per_machine in (True, False):
        async with machine_manager(emu, metrics_per_machine=per_machine) as h:
            name = f"m-{per_machine}".lower()
            emu.create(machine_doc(name))
            await h.wait_phase(name, PHASE_RUNNING)
            text = generate_latest(h.manager.registry).decode()
            count = 1 if per_machine else 2
            assert f"mcm_machine_items_total {count}.0" in text
            for family in ("current_status_phase", "info", "status_condition"):
                exported = any(
                    line.startswith(f"mcm_machine_{family}{{") and f'name="{name}"' in line
                    for line in text.splitlines()
                )
                assert exported is per_machine, family


PER_MACHINE = (
    "mcm_machine_current_status_phase",
    "mcm_machine_info",
    "mcm_machine_status_condition",
)


def machine_series(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        if family.name in PER_MACHINE
        for s in family.samples
    }


@pytest.mark.slow
async def test_served_per_machine_series_follow_the_cache(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """/metrics serves the per-machine series from lines kept per machine version: what it
    serves is what the registry's samples say, and a changed or deleted machine shows at the
    next scrape."""
    install_crds(emu)
    seed_class(emu)
    config = ManagerConfig(
        machine=MachineOptions(sim_cloud_url=emu.extension(SimulatedCloud).url),
        workers={"machine": 5},
    )
    contexts: list[MachineContext] = []

    def machine(manager: Manager, config: ManagerConfig) -> None:
        contexts.append(setup(manager, config))

    async with run_manager(
        emu, machine, config=config, workers=config.workers, metrics_bind_address="127.0.0.1:0"
    ) as manager:
        h = Harness(emu, manager.client, manager, contexts[0])
        for name in ("m-1", "m-2"):
            emu.create(machine_doc(name))
            await h.wait_phase(name, PHASE_RUNNING)

        async def served() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            response = await http_get(h.manager, "/metrics")
            assert response.status_code == 200
            return machine_series(response.text)

        first = await served()
        assert first == machine_series(generate_latest(h.manager.registry).decode())
        assert {dict(labels)["name"] for _, labels in first} == {"m-1", "m-2"}
        assert first == await served()  # served again from the kept lines

        emu.delete(MACHINE_API, "Machine", "m-2", "default")
        await eventually(lambda: h.machine("m-2") is None, on=h.manager)
        after = await served()
        assert {dict(labels)["name"] for _, labels in after} == {"m-1"}
        assert after == {k: v for k, v in first.items() if dict(k[1])["name"] == "m-1"}
