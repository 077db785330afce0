"""A controller: event sources feeding a work queue drained by reconcile workers.

Contract with the reconciler (controller-runtime's):

* ``reconcile(key)`` is level-based: it reads current state (the cache), never trusts the event
  that woke it, and may run again at any time. One key is never reconciled twice at once.
* Return ``Result()`` when done, ``Result(requeue_after=s)`` to look again later (the failure
  count is reset), raise ``TerminalError`` for a failure retrying cannot fix (no retry), raise
  anything else to retry with the controller's rate limiter (5 ms doubling to 1000 s by default).
* Exceptions are logged once with the controller and key, counted, and never stop the manager.
* ``NotLeader`` (a fenced write refused: the process is stepping down) is one log line and
  the key is dropped — no traceback, no retry, not counted as an error.

Workers and fairness: a worker that finds keys ready takes them one after another without
passing through trio's scheduler (that trip cost as much as the rest of the queue), for at most
``WORKER_SLICE`` (1 ms) of wall time; then it yields like any trio task. So a reconcile that
never awaits anything can delay other tasks (watches, the API emulator in tests, probes) by
about one slice per worker, never by a whole queue. Cancellation is checked before every
reconcile: a controller cancelled or stopped with a million keys queued starts no new one.

Example::

    class Greeter:
        async def reconcile(self, key: ObjectKey) -> Result:
            config_map = lister.get(key.namespace, key.name)
            if config_map is None:
                return Result()                      # deleted: nothing to do
            ...                                      # make the world match it
            return Result(requeue_after=60)          # and look again in a minute

    controller = Controller("greeter", Greeter(), workers=4, registry=registry)
    controller.watch(Source(informer, lambda cm: [ObjectKey(cm.namespace, cm.name)]))
    nursery.start_soon(controller.run)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import trio
from prometheus_client import CollectorRegistry

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.controller.metrics import BoundControllerMetrics, controller_metrics
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.queue import QueueShutDown, WorkQueue
from kubetrio.runtime.controller.queuemetrics import workqueue_metrics
from kubetrio.runtime.controller.ratelimit import RateLimiter
from kubetrio.runtime.leaderelection.fence import is_not_leader
from kubetrio.runtime.util.log import get_logger

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)

# Keys from the initial list go behind fresh events (controller-runtime's LowPriority), so a
# restart with thousands of objects does not delay reacting to a change that just happened.
INITIAL_LIST_PRIORITY = -100

# Longest stretch (perf_counter seconds) a worker hands itself ready keys before it lets the
# other tasks run: trio's own scheduling batches are of the same order.
WORKER_SLICE = 0.001

log = get_logger("kubetrio.controller")


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing, or another look after ``requeue_after`` s."""

    requeue_after: float | None = None


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix: counted and logged, not retried."""


class Reconciler(Protocol[K_contra]):
    """What a controller calls for each key: make the world match the desired state of the
    object ``key`` names, reading the cache rather than trusting the event that woke it; return
    a ``Result`` (``requeue_after`` to look again later) or raise to be retried with backoff
    (``TerminalError``: not retried)."""

    async def reconcile(self, key: K_contra) -> Result:
        """Make the world match what ``key``'s object asks for; called again on every change
        and on failure, so it must be safe to run any number of times."""
        ...


Mapper = Callable[[Any], Iterable[K]]


@dataclass(frozen=True, slots=True)
class Source(Generic[K]):
    """Events of one informer, mapped to keys and filtered by predicates."""

    informer: Informer[Any]
    mapper: Mapper[K]
    predicates: tuple[Predicate, ...] = ()


class Controller(Generic[K]):
    """Runs ``workers`` reconcile loops over one queue fed by its sources."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler[K],
        *,
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        registry: CollectorRegistry | None = None,
        needs_leader_election: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1, got {workers}")
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self.needs_leader_election = needs_leader_election
        # Sharded (the builder's ``.sharded()``): runs while this replica holds its shard Lease.
        self.needs_shard_lease = False
        self.queue: WorkQueue[K] = WorkQueue(
            name=name,
            rate_limiter=rate_limiter,
            metrics=workqueue_metrics(registry) if registry is not None else None,
            controller=name,
        )
        self.sources: list[Source[K]] = []
        self._registry_metrics = controller_metrics(registry) if registry is not None else None
        self._metrics: BoundControllerMetrics | None = None
        self._stopping = False
        self._log = log.bind(controller=name)

    # -- wiring ---------------------------------------------------------------------------

    def watch(self, source: Source[K]) -> None:
        """Feed the queue from ``source`` (before or after the informer started)."""
        self.sources.append(source)
        source.informer.add_handler(self._handler_for(source))

    def _handler_for(self, source: Source[K]) -> EventHandler[Any]:
        predicates = source.predicates
        mapper = source.mapper
        enqueue = self.queue.add

        # Called for every event: without predicates, no generator is built for ``all``.
        def on_add(obj: KubeObject, initial: bool) -> None:
            if not predicates or all(p.create(obj) for p in predicates):
                priority = INITIAL_LIST_PRIORITY if initial else 0
                for key in mapper(obj):
                    enqueue(key, priority)

        def on_update(old: KubeObject, new: KubeObject) -> None:
            if not predicates or all(p.update(old, new) for p in predicates):
                # Both sides: an owner or mapped key may have changed with the update.
                for key in {*mapper(old), *mapper(new)}:
                    enqueue(key)

        def on_delete(obj: KubeObject | DeletedFinalStateUnknown[Any]) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                obj = obj.obj
            if not predicates or all(p.delete(obj) for p in predicates):
                for key in mapper(obj):
                    enqueue(key)

        return EventHandler(on_add=on_add, on_update=on_update, on_delete=on_delete)

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        """Reconcile until ``stop`` (in-flight reconciles finish) or cancellation."""
        if self._registry_metrics is not None:
            self._metrics = self._registry_metrics.bind(self.name, self.workers)
        self._log.info("starting workers", workers=self.workers)
        try:
            async with trio.open_nursery() as nursery:
                for _ in range(self.workers):
                    nursery.start_soon(self._worker)
        finally:
            self.queue.shutdown()
        self._log.info("all workers finished")

    def stop(self) -> None:
        """Take no new keys; workers return once their current reconcile is done."""
        self._stopping = True
        self.queue.shutdown()

    async def _worker(self) -> None:
        # Within a slice a ready key is taken without a trip through trio's scheduler (that
        # trip cost as much as the queue); between slices ``get`` is a full schedule point, so
        # other tasks wait at most one slice plus one reconcile. ``_process`` checks for
        # cancellation before every key either way.
        queue = self.queue
        slice_ends = 0.0
        while True:
            try:
                if time.perf_counter() < slice_ends:
                    try:
                        key = queue.get_nowait()
                    except trio.WouldBlock:
                        key = await queue.get()
                        slice_ends = time.perf_counter() + WORKER_SLICE
                else:
                    key = await queue.get()
                    slice_ends = time.perf_counter() + WORKER_SLICE
            except QueueShutDown:
                return
            if self._stopping:
                self.queue.done(key)
                return
            await self._process(key)

    async def _process(self, key: K) -> None:
        metrics = self._metrics
        if metrics is not None:
            metrics.active_workers.value += 1
        started = time.perf_counter()
        outcome = ""  # stays empty only when the reconcile was cancelled (shutdown)
        try:
            # Cancelled (the manager stops) while keys are ready: no new reconcile starts.
            await trio.lowlevel.checkpoint_if_cancelled()
            result = await self.reconciler.reconcile(key)
        except TerminalError as error:
            outcome = "terminal_error"
            self._log.error("reconcile failed, not retrying", key=str(key), error=str(error))
        except Exception as error:
            if is_not_leader(error):
                self.queue.forget(key)
                self._log.warning("not the leader, dropping key", key=str(key))
                return
            outcome = "error"
            self.queue.add_rate_limited(key)
            self._log_failure(key, error)
        else:
            if result.requeue_after is not None and result.requeue_after > 0:
                outcome = "requeue_after"
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
            else:
                outcome = "success"
                self.queue.forget(key)
        finally:
            self.queue.done(key)
            if metrics is not None:
                metrics.active_workers.value -= 1
                if outcome:
                    metrics.finished(outcome, time.perf_counter() - started)

    def _log_failure(self, key: K, error: Exception) -> None:
        retries = self.queue.num_requeues(key)
        if isinstance(error, ApiError):
            # Expected in a distributed system: one line, no traceback. A conflict is routine
            # optimistic concurrency (the object changed since the cache read it; the retry
            # reads it afresh), so it is no reason for a person to look.
            if error.status == 409 and error.reason == "Conflict":
                self._log.info(
                    "object changed while reconciling, will retry", key=str(key), retries=retries
                )
                return
            self._log.warning(
                "reconcile failed, will retry", key=str(key), error=str(error), retries=retries
            )
            return
        # Anything else is a bug in the reconciler: Go would call it a panic.
        if self._metrics is not None:
            self._metrics.panics.inc()
        self._log.exception("reconcile raised, will retry", key=str(key), retries=retries)
