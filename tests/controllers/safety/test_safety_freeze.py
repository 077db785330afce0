"""MCM's safety freeze end to end: an API outage (every request answered 503, watches cut)
during which an Unknown machine's health timeout runs out. Frozen, the controller does not mark
it Failed, during the outage or right after; on recovery its health timeout is reset with MCM's
description and ``mcm_machine_controller_frozen`` goes back to 0. The same outage without the
freeze (a status-check timeout longer than the outage) marks it Failed at once: the control."""

from __future__ import annotations

import dataclasses

import pytest
import trio
import trio.testing
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING, PHASE_UNKNOWN, Machine
from kubetrio.api.meta import parse_time
from kubetrio.controllers.safety.apiserver import (
    HEALTH_TIMEOUT_RESET,
    ApiServerWatchdog,
    answers,
    control_cluster,
    target_cluster,
)
from kubetrio.controllers.safety.freeze import ControllerFreeze
from kubetrio.controllers.safety.setup import machine_queue
from kubetrio.emulator import Emulator
from kubetrio.emulator.faults import FaultRule
from kubetrio.runtime.util.clock import seconds_since
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)

NOT_READY_AT_100 = [{"type": "Ready", "status": "False", "afterSeconds": 100}]
# Shorter than MCM's 10 min default: what is proven is the order of events (frozen before the
# health timeout runs out, well inside the outage), and simulated time costs real time here (the
# informers' jittered backoffs make a clock jump every few simulated seconds).
HEALTH_TIMEOUT = 200.0
OUTAGE = 400.0  # the health timeout runs out in the middle of it


def frozen_metric(h: Harness) -> float:
    text = generate_latest(h.manager.registry).decode()
    for family in text_string_to_metric_families(text):
        if family.name == "mcm_machine_controller_frozen":
            return family.samples[0].value
    raise AssertionError("mcm_machine_controller_frozen is not exported")


def stored_status(emu: Emulator, name: str) -> dict[str, object]:
    machine = emu.get(MACHINE_API, "Machine", name, "default")
    assert machine is not None
    status: dict[str, object] = machine["status"]
    return status


def stored_phase(emu: Emulator, name: str) -> str:
    current = stored_status(emu, name)["currentStatus"]
    assert isinstance(current, dict)
    return str(current["phase"])


def outage(emu: Emulator) -> FaultRule:
    """The API server gone for the controller: every request 503, open watches cut."""
    rule = emu.faults.add(status=503, message="the API server is down")
    emu.faults.cut_watches()
    return rule


async def unknown_machine(emu: Emulator, h: Harness) -> float:
    emu.create(machine_doc("m-1"))
    await h.wait_phase("m-1", PHASE_UNKNOWN)
    return trio.current_time()


@pytest.mark.slow
async def test_an_outage_freezes_the_controller_and_recovery_resets_health_timeouts(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(emu, health_timeout=HEALTH_TIMEOUT) as h:
        unknown_since = await unknown_machine(emu, h)
        assert frozen_metric(h) == 0
        rule = outage(emu)
        began = trio.current_time()
        with trio.fail_after(120):
            await h.ctx.freeze.wait(True)
        # Unreachable for more than the 30 s timeout, seen by a check every minute (every 6 s
        # once the first one failed).
        assert 30 < trio.current_time() - began <= 60 + 30 + 6 + 1
        assert frozen_metric(h) == 1
        await trio.sleep(OUTAGE - (trio.current_time() - began))
        assert trio.current_time() - unknown_since > HEALTH_TIMEOUT + 100
        assert stored_phase(emu, "m-1") == PHASE_UNKNOWN  # never marked Failed meanwhile
        assert h.ctx.freeze.frozen
        emu.faults.remove(rule.id)
        recovered = trio.current_time()
        with trio.fail_after(120):
            await h.ctx.freeze.wait(False)
        assert trio.current_time() - recovered <= 60 + 1  # the next check
        assert frozen_metric(h) == 0
        status = stored_status(emu, "m-1")
        current, last = status["currentStatus"], status["lastOperation"]
        assert isinstance(current, dict) and isinstance(last, dict)
        assert current["phase"] == PHASE_RUNNING and not current.get("timeoutActive")
        reset_age = seconds_since(parse_time(current["lastUpdateTime"]))
        assert reset_age is not None and 0 <= reset_age <= 2  # the health clock restarted
        assert last["description"] == HEALTH_TIMEOUT_RESET
        assert (last["state"], last["type"]) == ("Successful", "HealthCheck")
        reset_at = trio.current_time()
        # 30 s later the machine is looked at again: its node is still NotReady, so Unknown
        # again — with a fresh health timeout, and Failed only once that one runs out.
        reset_stamp = parse_time(current["lastUpdateTime"])
        assert reset_stamp is not None

        def unknown_after_reset(m: Machine | None) -> bool:
            since = parse_time(m.status.current_status.last_update_time) if m else None
            return (
                m is not None
                and m.phase == PHASE_UNKNOWN
                and since is not None
                and since > reset_stamp
            )

        await h.wait_machine("m-1", unknown_after_reset)
        # At the 30 s requeue — or, when the informers are still backing off after the outage
        # (up to a minute, jittered), once the cache shows the reset: a pass on the stale
        # cache cannot mark it Failed, as its write carries the stale resourceVersion.
        assert 29 <= trio.current_time() - reset_at <= 30 + 60 + 2
        unknown_again = trio.current_time()
        await h.wait_phase("m-1", PHASE_FAILED)
        assert HEALTH_TIMEOUT <= trio.current_time() - unknown_again <= HEALTH_TIMEOUT + 2


@pytest.mark.slow
async def test_without_the_freeze_the_same_outage_fails_the_machine_on_recovery(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(
        emu, health_timeout=HEALTH_TIMEOUT, safety_apiserver_status_check_timeout=2 * OUTAGE
    ) as h:
        await unknown_machine(emu, h)
        rule = outage(emu)
        await trio.sleep(OUTAGE)
        assert not h.ctx.freeze.frozen and frozen_metric(h) == 0
        assert stored_phase(emu, "m-1") == PHASE_UNKNOWN  # no write got through
        emu.faults.remove(rule.id)
        recovered = trio.current_time()
        await h.wait_phase("m-1", PHASE_FAILED)
        assert trio.current_time() - recovered <= 90  # retries and the relist, no more


async def test_two_clusters_are_probed_and_the_target_alone_down_freezes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM probes a Machine in the control cluster and a Node in the target cluster; either
    unreachable freezes. Here one emulator plays both and only Node requests fail (the target
    down), driving a watchdog of its own, check by check."""
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(emu) as h:
        await unknown_machine(emu, h)
        ctx = dataclasses.replace(h.ctx, freeze=ControllerFreeze())
        watchdog = ApiServerWatchdog(
            ctx,
            machine_queue(h.manager),
            [control_cluster(h.client, "default"), target_cluster(h.client)],
        )
        assert await watchdog.check() == 60 and not ctx.freeze.frozen
        rule = emu.faults.add(resource="nodes", status=503)
        began = trio.current_time()
        while True:
            delay = await watchdog.check()
            assert delay == 6  # statuscheck-timeout / 5 while down
            if ctx.freeze.frozen:
                break
            await trio.sleep(delay)
        assert 36 <= trio.current_time() - began <= 37  # the first check past 30 s
        assert await answers(control_cluster(h.client, "default"), 30)
        assert not await answers(target_cluster(h.client), 30)
        assert await watchdog.check() == 60 and ctx.freeze.frozen  # still down: stays frozen
        emu.faults.remove(rule.id)
        assert await watchdog.check() == 60 and not ctx.freeze.frozen
        status = stored_status(emu, "m-1")
        last = status["lastOperation"]
        assert isinstance(last, dict) and last["description"] == HEALTH_TIMEOUT_RESET
