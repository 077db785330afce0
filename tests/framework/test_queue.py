"""WorkQueue rules, one test each, on trio's MockClock (autojump at 0)."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel
import trio.testing

from kubetrio.runtime.controller.queue import ObjectKey, QueueShutDown, WorkQueue
from kubetrio.runtime.controller.ratelimit import ExponentialFailureRateLimiter


async def get_now(queue: WorkQueue[str]) -> str | None:
    """The key ``get`` hands out without any time passing, or None if it would wait."""
    start = trio.current_time()
    with trio.move_on_after(0.001):
        key = await queue.get()
        assert trio.current_time() == start
        return key
    return None


async def test_duplicate_adds_coalesce(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await get_now(queue) == "a"
    assert await get_now(queue) == "b"
    assert await get_now(queue) is None


async def test_key_added_while_processing_waits_for_done(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert await get_now(queue) == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0
    assert await get_now(queue) is None, "handed to a second worker while being processed"
    queue.done("a")
    assert len(queue) == 1
    assert await get_now(queue) == "a"
    queue.done("a")
    assert await get_now(queue) is None


async def test_two_workers_never_share_a_key(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    running: set[str] = set()
    handled: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            assert key not in running
            running.add(key)
            await trio.sleep(1)
            handled.append(key)
            running.discard(key)
            queue.done(key)

    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(worker)
        queue.add("a")
        await trio.sleep(0.5)
        queue.add("a")  # while the first worker holds it
        await trio.sleep(0.1)
        assert running == {"a"}
        await trio.sleep(5)
        queue.shutdown()
    assert handled == ["a", "a"]


async def test_fifo_within_priority_and_higher_priority_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in "abc":
        queue.add(key)
    queue.add("z", priority=10)
    queue.add("b", priority=5)  # bump keeps the max priority
    queue.add("b", priority=1)  # a lower duplicate does not lower it
    queue.add("y", priority=-100)
    order = [await get_now(queue) for _ in range(5)]
    assert order == ["z", "b", "a", "c", "y"]


async def test_add_after_hands_out_in_ready_time_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    start = trio.current_time()
    queue.add_after("a", 3)
    queue.add_after("b", 1)
    queue.add_after("c", 2)
    queue.add_after("d", 0)
    seen = []
    for _ in range(4):
        key = await queue.get()
        seen.append((key, trio.current_time() - start))
    assert seen == [("d", 0), ("b", 1), ("c", 2), ("a", 3)]


async def test_readding_a_parked_key_only_moves_it_earlier(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    start = trio.current_time()
    queue.add_after("a", 5)
    queue.add_after("a", 10)
    assert await queue.get() == "a"
    assert trio.current_time() - start == 5
    queue.done("a")
    queue.add_after("a", 5)
    queue.add_after("a", 1)
    assert await queue.get() == "a"
    assert trio.current_time() - start == 6
    queue.done("a")
    assert await get_now(queue) is None, "the superseded later entry must not come out again"
    await trio.sleep(10)
    assert await get_now(queue) is None


async def test_sleeping_worker_wakes_for_an_earlier_parked_key(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    start = trio.current_time()
    queue.add_after("late", 100)
    got: list[tuple[str, float]] = []

    async def worker() -> None:
        for _ in range(2):
            key = await queue.get()
            got.append((key, trio.current_time() - start))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker)
        await trio.sleep(1)  # the worker now sleeps until t=100
        queue.add_after("early", 2)
    assert got == [("early", 3), ("late", 100)]


async def test_parked_key_that_came_due_precedes_later_adds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("parked", 1)
    await trio.sleep(2)
    assert len(queue) == 1, "a due parked key counts as queued"
    queue.add("fresh")
    assert [await get_now(queue), await get_now(queue)] == ["parked", "fresh"]


async def test_parked_key_coalesces_with_queued_one(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add_after("a", 1)
    await trio.sleep(2)
    assert len(queue) == 1
    assert await get_now(queue) == "a"
    assert await get_now(queue) is None


async def test_rate_limited_adds_back_off_and_forget_resets(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue(rate_limiter=ExponentialFailureRateLimiter(1.0, 60.0))
    delays = []
    for _ in range(4):
        start = trio.current_time()
        queue.add_rate_limited("a")
        assert await queue.get() == "a"
        delays.append(trio.current_time() - start)
        queue.done("a")
    assert delays == [1, 2, 4, 8]
    assert queue.num_requeues("a") == 4
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    start = trio.current_time()
    queue.add_rate_limited("a")
    assert await queue.get() == "a"
    assert trio.current_time() - start == 1


async def test_shutdown_wakes_waiting_workers(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    ended: list[str] = []

    async def worker(name: str) -> None:
        with pytest.raises(QueueShutDown):
            await queue.get()
        ended.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker, "w1")
        nursery.start_soon(worker, "w2")
        await trio.sleep(1)
        queue.shutdown()
    assert sorted(ended) == ["w1", "w2"]


async def test_shutdown_drains_queued_keys_then_refuses(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.add_after("parked", 1)
    queue.shutdown()
    queue.add("c")
    queue.add_after("d", 1)
    queue.add_rate_limited("e")
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    with pytest.raises(QueueShutDown):
        await queue.get()
    await trio.sleep(5)
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_cancelled_get_loses_nothing(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    with trio.move_on_after(1) as scope:
        await queue.get()
    assert scope.cancelled_caught
    queue.add("a")
    assert await get_now(queue) == "a"


async def test_cancelled_get_while_items_flow(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[int] = WorkQueue()
    received: list[int] = []

    async def worker() -> None:
        while True:
            key = await queue.get()
            received.append(key)
            queue.done(key)

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(worker)
        await trio.sleep(1)
        for i in range(100):
            queue.add(i)
            if i % 10 == 0:
                await trio.lowlevel.checkpoint()
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert sorted(received) == list(range(100))


async def test_shutdown_with_drain_waits_for_in_flight_work(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.get()

    async def finish_later() -> None:
        await trio.sleep(7)
        queue.done(key)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(finish_later)
        await queue.shutdown_with_drain()
        assert trio.current_time() - start == 7
    await queue.shutdown_with_drain()  # nothing in flight: returns at once
    assert trio.current_time() - start == 7


async def test_shutdown_ends_a_drain_wait(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("stuck")
    await queue.get()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.shutdown_with_drain)
        await trio.sleep(3)
        queue.shutdown()
    assert trio.current_time() - start == 3


async def test_done_of_unknown_key_is_ignored(autojump_clock: trio.testing.MockClock) -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.done("never-seen")
    assert len(queue) == 0


def test_object_key_is_a_frozen_hashable_pair() -> None:
    key = ObjectKey("default", "web-0")
    assert str(key) == "default/web-0"
    assert str(ObjectKey("", "node-1")) == "node-1"
    assert {key: 1}[ObjectKey("default", "web-0")] == 1
    with pytest.raises(AttributeError):
        key.name = "other"  # type: ignore[misc]
