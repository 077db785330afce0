"""The controller's worker loop takes ready keys without a schedule point each, yet stays fair.

Pinned here: stopping or cancelling a controller whose queue holds a million ready keys ends it
before another reconcile starts; other tasks keep running while workers drain a deep queue.
"""

from __future__ import annotations

import itertools

import trio

from kubetrio.runtime.controller.controller import Controller, Result


class Counting:
    """A no-op reconciler that never yields (the worst case for fairness); sets ``reached``
    at the ``at``-th call."""

    def __init__(self, at: int) -> None:
        self.calls = 0
        self.at = at
        self.reached = trio.Event()

    async def reconcile(self, key: int) -> Result:
        self.calls += 1
        if self.calls == self.at:
            self.reached.set()
        return Result()


MILLION = 1_000_000


def filled(reconciler: Counting, keys: int, workers: int = 4) -> Controller[int]:
    controller: Controller[int] = Controller("worker-test", reconciler, workers=workers)
    add = controller.queue.add
    for key in range(keys):
        add(key)
    return controller


async def test_stop_with_a_million_ready_keys_starts_no_further_reconcile() -> None:
    reconciler = Counting(at=1000)
    controller = filled(reconciler, MILLION)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(controller.run)
        await reconciler.reached.wait()
        controller.stop()
        at_stop = reconciler.calls
    # ``run`` returned (the nursery closed) without reconciling another key.
    assert reconciler.calls == at_stop
    assert at_stop < MILLION // 2


async def test_cancel_with_a_million_ready_keys_starts_no_further_reconcile() -> None:
    reconciler = Counting(at=1000)
    controller = filled(reconciler, MILLION)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(controller.run)
            await reconciler.reached.wait()
            scope.cancel()
            at_cancel = reconciler.calls
    assert scope.cancelled_caught
    assert reconciler.calls == at_cancel
    assert at_cancel < MILLION // 2


async def test_other_tasks_run_while_workers_drain_a_deep_queue() -> None:
    keys = 200_000
    reconciler = Counting(at=keys)
    controller = filled(reconciler, keys)
    # Reconciles done at each turn the other task got: without a schedule point now and then,
    # it would get one turn before the first key and the next after the last.
    seen: list[int] = []

    async def other_task() -> None:
        while True:
            seen.append(reconciler.calls)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(controller.run)
        nursery.start_soon(other_task)
        await reconciler.reached.wait()
        controller.stop()
        nursery.cancel_scope.cancel()
    during = [calls for calls in seen if 0 < calls < keys]
    assert len(during) >= 10, f"the other task ran {len(during)} times during the drain"
    gaps = [later - earlier for earlier, later in itertools.pairwise(seen)]
    assert max(gaps) < keys // 4, f"{max(gaps)} reconciles between two turns of the other task"
