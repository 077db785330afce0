"""FailurePermits: one lock per deployment, kept only while someone holds or waits for it."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.controllers.machine.failing import FailurePermits


async def test_permits_of_many_deployments_leave_no_locks_behind(
    mock_clock: trio.testing.MockClock,
) -> None:
    permits = FailurePermits()
    for i in range(100):
        async with permits.hold(f"pool-{i}") as acquired:
            assert acquired
    assert permits._locks == {}


async def test_a_waiter_keeps_the_lock_until_it_has_had_it(
    mock_clock: trio.testing.MockClock,
) -> None:
    permits = FailurePermits()
    order: list[str] = []

    async def second() -> None:
        async with permits.hold("pool") as acquired:
            order.append(f"second {acquired}")

    async with trio.open_nursery() as nursery, permits.hold("pool") as acquired:
        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()
        order.append(f"first {acquired}")
    assert order == ["first True", "second True"]
    assert permits._locks == {}
