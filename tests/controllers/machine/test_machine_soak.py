"""Progress under faults: machines are created and deleted while a quarter of the API requests
fail, and a machine whose API calls failed for minutes carries on promptly once the API server
is healthy again."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.machine import PHASE_PENDING, PHASE_RUNNING
from kubetrio.emulator import Emulator
from kubetrio.emulator.faults import FaultRule
from tests.helpers.machines import install_crds, machine_doc, machine_manager, seed_class
from tests.helpers.soak import soak

SMALL_RUN_RATIO_BOUND = 8.0


@pytest.mark.slow
async def test_soak_every_machine_completes_under_faults_in_bounded_time(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The small soak guards completion, leftovers and the fault mix; the 3x time target is
    ``tests/bench/soak.py``'s, at 50 machines (its figure is in ``docs/performance.md``). With 6
    machines the fault-free run lasts ~16 s, so one extra ShortRetry or one informer backing off
    after consecutive failed watches moves the ratio by a whole unit: observed 1.4-3.6, once 6.0 (a
    creation waiting ~75 s on a Node informer in backoff). The bound here still fails on the
    failures it was written against (deletions stalled until the faults cleared; minute-long
    per-key backoffs)."""
    calm = await soak(6, faults=False)
    stormy = await soak(6, faults=True)
    for run in (calm, stormy):
        figures = run.to_json()
        assert run.completed == run.machines == run.running, figures
        assert run.orphan_vms == 0, figures
        assert run.stuck_finalizers == 0, figures
        assert run.tokens_left == 0, figures
        assert run.nodes_left == 0, figures
        assert run.pods_on_gone_nodes == 0, figures
    # The faults were injected at the rules' rates: within 4.5 standard deviations of the count
    # the rules predict for the requests this run made. A fixed floor (failed_fraction >= 0.2)
    # failed once at 0.197: the seed fixes the dice, not which request meets which roll (that
    # is the scheduling's), so ~280 requests at ~25 % stray by ±2.6 points from run to run; at
    # 4.5 sd a sound run fails about once in 150 000. And any mix of verbs is a fifth faulted at
    # least (the plainest request meets 500, 503 and 429: 1 - .92 * .93 * .93 = 0.204).
    assert abs(stormy.failed - stormy.expected_failed) <= 4.5 * stormy.failed_sd, stormy.to_json()
    assert stormy.expected_failed >= 0.2 * stormy.requests, stormy.to_json()
    assert set(stormy.injected) >= {409, 410, 429, 500, 503}, stormy.to_json()
    ratio = stormy.seconds / calm.seconds
    assert ratio <= SMALL_RUN_RATIO_BOUND, (ratio, calm.to_json(), stormy.to_json())


@pytest.mark.slow
async def test_wait_after_an_outage_is_bounded(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Ten minutes of every machine write failing (a long run of failures, whose per-key
    backoff would reach minutes), then a healthy API server: the machine goes on within
    ShortRetry, without waiting for an event that will never come."""
    install_crds(emu)
    seed_class(emu, bootSeconds=0)
    async with machine_manager(emu) as h:
        await h.manager.cache.wait_for_sync()
        outage = emu.faults.add(FaultRule(verb="patch", resource="machines", status=503))
        emu.create(machine_doc("m-1"))
        await trio.sleep(600)  # simulated time: the outage lasts ten minutes
        assert h.machine("m-1") is not None and h.machine("m-1").phase == ""
        emu.faults.remove(outage.id)
        healed = trio.current_time()
        await h.wait_phase("m-1", PHASE_PENDING, within=3600)
        waited = trio.current_time() - healed
        assert waited <= 5.5, waited
        await h.wait_phase("m-1", PHASE_RUNNING, within=60)


async def test_a_node_that_joined_before_pending_was_written_is_not_missed(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Under faults a creation pass can fail after the VM exists and be retried after its
    node joined (the VM booted faster than the retries): the node's events are spent by the
    time the retry writes Pending, so that pass must come back within ShortRetry, not wait
    ten minutes for an event that already came (the soak's slowest machine: Running 626 s in).
    """
    install_crds(emu)
    seed_class(emu, bootSeconds=0)
    async with machine_manager(emu) as h:
        await h.manager.cache.wait_for_sync()
        emu.faults.add(verb="patch", resource="machines", subresource="status", status=500, count=8)
        emu.create(machine_doc("m-1"))
        created = trio.current_time()
        await h.wait_node("m-1", lambda n: n is not None and n.condition("Ready") is not None)
        await h.wait_phase("m-1", PHASE_RUNNING, within=3600)
        assert trio.current_time() - created <= 7.0  # the 8 failures (1.3 s), then ShortRetry
        assert emu.faults.injected[("patch", 500)] == 8
