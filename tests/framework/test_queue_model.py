"""Model-based test: the WorkQueue against a plain reference model, driven by hypothesis.

The reference model states the rules directly: which keys are ready, in which order (higher
priority first, then the order in which keys became ready, a parked key becoming ready at its
ready time), which are being processed, which are parked. Every step compares the queue with it;
the teardown drains everything, so a lost or duplicated key shows as a mismatch.

Hypothesis drives the machine synchronously while the queue lives in a trio run on a frozen
MockClock in another thread; steps cross over with ``trio.from_thread``. Time moves only when
the ``advance`` rule jumps the clock, so every run is deterministic.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kubetrio.runtime.controller.queue import WorkQueue
from kubetrio.runtime.controller.ratelimit import ExponentialFailureRateLimiter

pytestmark = pytest.mark.slow

T = TypeVar("T")

KEYS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
PRIORITIES = st.sampled_from([-100, 0, 0, 0, 5])
DELAYS = st.sampled_from([0.0, 0.25, 1.0, 1.0, 2.5, 7.0])


class TrioThread:
    """A trio run in a background thread that other threads hand work to."""

    def __init__(self) -> None:
        self.clock = trio.testing.MockClock(rate=0)
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        async def main() -> None:
            self.token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            self._started.set()
            await self._stop.wait()

        trio.run(main, clock=self.clock)

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return trio.from_thread.run(fn, *args, trio_token=self.token)

    def call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        return trio.from_thread.run_sync(fn, *args, trio_token=self.token)

    def close(self) -> None:
        self.call_sync(self._stop.set)
        self._thread.join()


class QueueMachine(RuleBasedStateMachine):
    portal: TrioThread

    def __init__(self) -> None:
        super().__init__()
        self.queue: WorkQueue[str] = WorkQueue(rate_limiter=ExponentialFailureRateLimiter(0.5, 8))
        self.order = itertools.count()
        self.ready: dict[str, tuple[int, int]] = {}  # key -> (priority, order it became ready)
        self.dirty: dict[str, int] = {}  # key -> priority; ready, or re-added while processing
        self.processing: set[str] = set()
        self.parked: dict[str, tuple[float, int, int]] = {}  # key -> (ready_at, order, priority)
        self.failures: dict[str, int] = {}
        self.handed_out = 0

    # -- the model ------------------------------------------------------------------------

    def now(self) -> float:
        return self.portal.clock.current_time()

    def model_add(self, key: str, priority: int) -> None:
        if key in self.dirty:
            if priority > self.dirty[key]:
                self.dirty[key] = priority
                if key in self.ready:
                    self.ready[key] = (priority, next(self.order))
            return
        self.dirty[key] = priority
        if key not in self.processing:
            self.ready[key] = (priority, next(self.order))

    def model_promote(self) -> None:
        due = sorted((entry, key) for key, entry in self.parked.items() if entry[0] <= self.now())
        for (_, _, priority), key in due:
            del self.parked[key]
            self.model_add(key, priority)

    def model_add_after(self, key: str, delay: float, priority: int) -> None:
        self.model_promote()
        if delay <= 0:
            self.model_add(key, priority)
            return
        ready_at = self.now() + delay
        existing = self.parked.get(key)
        if existing is None or ready_at < existing[0]:
            self.parked[key] = (ready_at, next(self.order), priority)

    def expected_next(self) -> str:
        return min(self.ready, key=lambda k: (-self.ready[k][0], self.ready[k][1]))

    # -- rules ----------------------------------------------------------------------------

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.model_promote()
        self.model_add(key, priority)
        self.portal.call_sync(self.queue.add, key, priority)

    @rule(key=KEYS, delay=DELAYS, priority=PRIORITIES)
    def add_after(self, key: str, delay: float, priority: int) -> None:
        self.model_add_after(key, delay, priority)
        self.portal.call_sync(self.queue.add_after, key, delay, priority)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        failures = self.failures.get(key, 0)
        self.failures[key] = failures + 1
        self.model_add_after(key, min(0.5 * 2**failures, 8.0), 0)
        self.portal.call_sync(self.queue.add_rate_limited, key)

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.failures.pop(key, None)
        self.portal.call_sync(self.queue.forget, key)
        assert self.queue.num_requeues(key) == 0

    @rule(seconds=st.sampled_from([0.1, 0.25, 1.0, 3.0]))
    def advance(self, seconds: float) -> None:
        self.portal.call_sync(self.portal.clock.jump, seconds)

    def has_ready(self) -> bool:
        self.model_promote()
        return bool(self.ready)

    @precondition(lambda self: self.has_ready())
    @rule()
    def get(self) -> None:
        self.model_promote()
        expected = self.expected_next()
        assert len(self.queue) > 0, f"model has {sorted(self.ready)} ready, queue is empty"
        key = self.portal.call(self.queue.get)
        assert key not in self.processing, f"{key} handed to a second worker"
        assert key == expected, f"got {key}, model says {expected}; ready={self.ready}"
        del self.ready[key]
        del self.dirty[key]
        self.processing.add(key)
        self.handed_out += 1

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.processing.remove(key)
        self.model_promote()
        if key in self.dirty:
            self.ready[key] = (self.dirty[key], next(self.order))
        self.portal.call_sync(self.queue.done, key)

    @invariant()
    def lengths_agree(self) -> None:
        # In the model a parked key joins the ready set at its ready time; promoting now is
        # what the queue's length must already reflect, whether or not a worker looked.
        self.model_promote()
        assert self.portal.call_sync(len, self.queue) == len(self.ready)

    def teardown(self) -> None:
        """Let every parked key come due and drain: all pending keys come out exactly once."""
        self.portal.call_sync(self.portal.clock.jump, 1000.0)
        for key in sorted(self.processing):
            self.processing.remove(key)
            self.model_promote()
            if key in self.dirty:
                self.ready[key] = (self.dirty[key], next(self.order))
            self.portal.call_sync(self.queue.done, key)
        while self.has_ready():
            self.get()
            key = next(iter(self.processing))
            self.processing.remove(key)
            self.portal.call_sync(self.queue.done, key)
        assert not self.parked and not self.dirty
        assert self.portal.call_sync(len, self.queue) == 0


def test_queue_matches_reference_model() -> None:
    portal = TrioThread()
    QueueMachine.portal = portal
    try:
        run_state_machine_as_test(
            QueueMachine,
            settings=settings(
                max_examples=300,
                stateful_step_count=60,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        portal.close()
