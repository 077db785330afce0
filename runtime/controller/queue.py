"""The work queue between event handlers and reconcile workers.

Semantics are client-go's ``workqueue`` (plus controller-runtime's priorities), on trio:

* a key is queued at most once: adding a queued key again only raises its priority;
* a key being processed is never handed to a second worker; adding it meanwhile marks it
  dirty, and ``done`` queues it again;
* among equal priorities keys come out first-in first-out; higher priorities come first;
* ``add_after`` parks a key until its ready time; re-adding a parked key only moves it earlier;
* after ``shutdown`` nothing new is accepted, workers drain what is queued, then ``get`` raises
  ``QueueShutDown``.

There is no background task per queue. Parked keys live in a heap ordered by ready time, and a
worker waiting in ``get`` sleeps until either a key is added or the earliest ready time passes,
whichever is first. Due keys join the ready heap, in ready-time order, before any other key does
(every ``add``, ``done`` and ``get`` moves them first), so FIFO order is the order in which keys
became ready. Observers that must not wait for that (``len(queue)``, the depth gauge) count due
keys as queued, and a key's time in the queue is measured from its ready time, so no figure
depends on when a worker happened to look.

``get`` is a trio checkpoint, like a channel's ``receive``. ``get_nowait`` hands out a ready
key without one (``trio.WouldBlock`` when none is ready): a worker loop that yields on its own
schedule saves a trip through trio's scheduler per key, which is what ``Controller`` does.

Example::

    queue: WorkQueue[ObjectKey] = WorkQueue(name="machine")
    queue.add(ObjectKey("default", "m1"))
    queue.add(ObjectKey("default", "m1"))          # still queued once
    key = await queue.get()
    try:
        ...                                          # reconcile key
        queue.forget(key)                            # success: reset its backoff
    except Exception:
        queue.add_rate_limited(key)                  # retry after 5 ms, 10 ms, 20 ms, ...
    finally:
        queue.done(key)                              # re-queued if added meanwhile
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

import trio

from kubetrio.runtime.controller.ratelimit import RateLimiter, default_controller_rate_limiter

if TYPE_CHECKING:
    from kubetrio.runtime.controller.queuemetrics import QueueMetrics, WorkqueueMetricsProvider

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """Raised by ``get`` once the queue is shut down and nothing is left to hand out."""


class ObjectKey(NamedTuple):
    """The standard key of a namespaced (or, with namespace "", cluster-scoped) object."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# A parked entry object is the identity of a parked key: when its ready time moves earlier, a new
# entry is pushed and ``_parked_entry`` points at it, so the old one is recognised as stale when
# it surfaces (``mapping.get(key) is entry`` fails).
_ParkedEntry = tuple[float, int, K, int]  # (ready_at, sequence, key, priority)


class WorkQueue(Generic[K]):
    """A deduplicating, rate-limited, delaying priority queue of keys for reconcile workers."""

    def __init__(
        self,
        *,
        name: str | None = None,
        rate_limiter: RateLimiter | None = None,
        metrics: WorkqueueMetricsProvider | None = None,
        controller: str | None = None,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter()
        # Ready keys: one FIFO per priority (a queue sees one or two priorities, so this is O(1)
        # where one heap over all keys was O(log n)), and a heap of those priorities, negated.
        # The FIFOs hold the keys themselves: no object is allocated per add (and none is left
        # for the garbage collector to walk, which cost a seventh of the throughput).
        self._ready: dict[int, deque[K]] = {}
        self._priorities: list[int] = []
        # Keys that need processing, with their priority: queued (not processing), or waiting
        # for ``done``, which queues them then.
        self._dirty: dict[K, int] = {}
        # Raising a queued key's priority queues it again in the higher FIFO and leaves its
        # occurrence in the lower one behind, counted here by (priority, key). Within one FIFO
        # such leftovers are older than the key's live occurrence, so the first occurrences of a
        # key to surface are the counted ones: they are skipped, the rest are live.
        self._stale: dict[tuple[int, K], int] = {}
        # With metrics: the first add of each dirty key since it was last handed out
        # (``workqueue_queue_duration_seconds`` counts from there, as client-go's addTimes).
        self._added_at: dict[K, float] = {}
        # Keys handed to a worker, with the time they were handed out.
        self._processing: dict[K, float] = {}
        self._parked: list[_ParkedEntry[K]] = []
        self._parked_entry: dict[K, _ParkedEntry[K]] = {}
        self._sequence = itertools.count()
        self._workers_waiting = trio.lowlevel.ParkingLot()
        self._clock: trio.abc.Clock | None = None
        self._now: Callable[[], float] = self._bind_clock
        self._shutting_down = False
        self._draining = False
        self._drained = trio.Event()
        self._metrics: QueueMetrics | None = None
        if metrics is not None:
            if not name:
                raise ValueError("a queue needs a name to report metrics")
            self._metrics = metrics.register(self, name, controller or name)

    # -- adding ---------------------------------------------------------------------------

    def add(self, key: K, priority: int = 0) -> None:
        """Queue ``key`` for processing; a no-op once shutting down."""
        if self._shutting_down:
            return
        if self._parked:
            self._promote_due()
        self._add(key, priority, None)

    def _add(self, key: K, priority: int, added_at: float | None) -> None:
        # The hot path of every event handler: one dict lookup, one insert, one append.
        dirty = self._dirty
        current = dirty.get(key)
        if current is not None:
            if priority > current:
                dirty[key] = priority
                if key not in self._processing:
                    left = (current, key)
                    self._stale[left] = self._stale.get(left, 0) + 1
                    self._push_ready(key, priority)
            return
        dirty[key] = priority
        metrics = self._metrics
        if metrics is not None:
            metrics.adds.value += 1
            self._added_at[key] = self._now() if added_at is None else added_at
        if key in self._processing:
            return
        fifo = self._ready.get(priority)
        if fifo is None:
            self._push_ready(key, priority)
        else:
            fifo.append(key)
        if self._workers_waiting:  # unpark() costs even when no worker is parked
            self._workers_waiting.unpark()

    def _push_ready(self, key: K, priority: int) -> None:
        fifo = self._ready.get(priority)
        if fifo is None:
            fifo = self._ready[priority] = deque()
            heapq.heappush(self._priorities, -priority)
        fifo.append(key)

    def _hand_out(self) -> K | None:
        """Moves the first live key of the highest priority from ready to processing, or
        returns None; drops stale entries and emptied FIFOs on the way."""
        ready, priorities, stale = self._ready, self._priorities, self._stale
        while priorities:
            priority = -priorities[0]
            fifo = ready[priority]
            while fifo:
                key = fifo.popleft()
                if not stale or not self._was_left_behind(priority, key):
                    del self._dirty[key]
                    if not fifo:
                        del ready[priority]
                        heapq.heappop(priorities)
                    metrics = self._metrics
                    if metrics is None:
                        self._processing[key] = 0.0
                    else:
                        now = self._processing[key] = self._now()
                        metrics.queue_duration.observe(now - self._added_at.pop(key))
                    if ready and self._workers_waiting:
                        self._workers_waiting.unpark()
                    return key
            del ready[priority]
            heapq.heappop(priorities)
        return None

    def _was_left_behind(self, priority: int, key: K) -> bool:
        left = (priority, key)
        count = self._stale.get(left)
        if count is None:
            return False
        if count == 1:
            del self._stale[left]
        else:
            self._stale[left] = count - 1
        return True

    def add_after(self, key: K, delay: float, priority: int = 0) -> None:
        """Queue ``key`` once ``delay`` seconds have passed on the trio clock.

        A key already parked keeps the earlier of its two ready times.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.value += 1
        if self._parked:
            self._promote_due()
        if delay <= 0:
            self._add(key, priority, None)
            return
        ready_at = self._now() + delay
        existing = self._parked_entry.get(key)
        if existing is not None and existing[0] <= ready_at:
            return
        entry = (ready_at, next(self._sequence), key, priority)
        self._parked_entry[key] = entry
        heapq.heappush(self._parked, entry)
        if self._parked[0] is entry and self._workers_waiting:
            # A sleeping worker computed its wake-up time from the old head: wake one to
            # recompute. Busy workers look at the heap when they come back anyway.
            self._workers_waiting.unpark()

    def add_rate_limited(self, key: K, priority: int = 0) -> None:
        """Queue ``key`` after the delay its rate limiter asks for (one more failure)."""
        if self._shutting_down:
            return
        self.add_after(key, self.rate_limiter.when(key), priority)

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count; call it once the key was processed successfully."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)

    # -- handing out ----------------------------------------------------------------------

    async def get(self) -> K:
        """The next key to process; waits until there is one.

        Raises ``QueueShutDown`` once the queue is shut down and empty. The caller owns the key
        until it calls ``done(key)``.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while True:
            if self._parked:
                self._promote_due()
            key = self._hand_out()
            if key is not None:
                if not waited:  # a wait was this call's schedule point; else it needs one
                    await trio.lowlevel.cancel_shielded_checkpoint()
                return key
            if self._shutting_down:
                raise QueueShutDown(f"work queue {self.name or '(unnamed)'} is shut down")
            waited = True
            if not self._parked:  # nothing due later: no deadline (a cancel scope per wait)
                await self._workers_waiting.park()
                continue
            with trio.move_on_at(self._parked[0][0]):
                await self._workers_waiting.park()

    def get_nowait(self) -> K:
        """The next key if one is ready now, else ``trio.WouldBlock``; not a checkpoint.

        For a worker loop that already made sure it yields often enough (``Controller`` does):
        handing out a ready key needs no trip through the scheduler. The caller owns the key
        until it calls ``done(key)``, as with ``get``.
        """
        if self._parked:
            self._promote_due()
        key = self._hand_out()
        if key is None:
            raise trio.WouldBlock
        return key

    def _promote_due(self) -> None:
        now = self._now()
        parked = self._parked
        while parked and parked[0][0] <= now:
            entry = heapq.heappop(parked)
            ready_at, _, key, priority = entry
            if self._parked_entry.get(key) is entry:
                del self._parked_entry[key]
                self._add(key, priority, ready_at)

    def done(self, key: K) -> None:
        """Mark ``key`` as processed; if it was added meanwhile, it is queued again."""
        if self._parked:
            # While ``key`` still counts as processing: a due re-add of it only marks it dirty,
            # and it is queued once, below.
            self._promote_due()
        started = self._processing.pop(key, None)
        if started is None:
            return
        if self._metrics is not None:
            self._metrics.work_duration.observe(self._now() - started)
        priority = self._dirty.get(key)
        if priority is not None:
            self._push_ready(key, priority)
            if self._workers_waiting:
                self._workers_waiting.unpark()
        elif self._draining and not self._processing:
            self._drained.set()

    # -- shutting down --------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop accepting keys; workers drain what is queued, then ``get`` raises.

        Parked (delayed) keys are dropped. Also ends a pending ``shutdown_with_drain`` wait.
        """
        self._shutting_down = True
        self._parked.clear()
        self._parked_entry.clear()
        self._workers_waiting.unpark_all()
        self._drained.set()

    async def shutdown_with_drain(self) -> None:
        """Shut down, then wait until every key handed out so far is ``done``.

        Like client-go, this waits for in-flight work only; queued keys are still handed to
        whichever workers keep calling ``get``. A worker that never calls ``done`` makes this
        wait forever: wrap it in a cancel scope.
        """
        if self._processing:
            self._draining = True
        self.shutdown()
        if self._processing:
            self._drained = trio.Event()
            await self._drained.wait()
        else:
            await trio.lowlevel.checkpoint()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- observing ------------------------------------------------------------------------

    def __len__(self) -> int:
        """Keys ready to be handed out, counting parked keys whose time has come."""
        dirty = self._dirty
        # Read from metrics threads too: copies, and ``len`` before the (few) processing keys.
        queued = len(dirty) - sum(1 for key in self._processing.copy() if key in dirty)
        return queued + self._due_parked_count()

    def _due_parked_count(self) -> int:
        # Safe to call from a metrics thread: it reads copies, never the heap while it moves.
        if not self._parked or self._clock is None:
            return 0
        now = self._clock.current_time()
        live, dirty, processing = self._parked_entry, self._dirty, self._processing
        return sum(
            1
            for entry in self._parked.copy()
            if entry[0] <= now
            and live.get(entry[2]) is entry
            and entry[2] not in dirty
            and entry[2] not in processing
        )

    def processing_started(self) -> list[float]:
        """Start times of the keys being processed (a snapshot, safe from other threads)."""
        return list(self._processing.copy().values())

    def current_time(self) -> float:
        """The trio clock the queue runs on, readable from other threads once it has run."""
        return self._clock.current_time() if self._clock is not None else 0.0

    def _bind_clock(self) -> float:
        # The first reading inside trio finds the run's clock; later ones call it directly.
        clock = self._clock = trio.lowlevel.current_clock()
        self._now = clock.current_time
        return clock.current_time()
