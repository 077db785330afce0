"""Kubernetes Events: how controllers tell users what happened to an object.

``EventRecorder.record`` is synchronous and never waits on the API: it hands the event to the
``EventSender`` of its cluster (one background task per manager and cluster), so a reconcile never
waits on an Event POST and a slow API server slows no controller. The sender writes up to eight at
once, each object's in order, through client-go's correlator
(``kubetrio.runtime.events.correlator``):
repeats of an event become one Event whose ``count`` grows (a PATCH, or nothing at all while the
repeat still waits to be sent), similar ones are combined, and each object gets at most 25 writes at
once and then one per 5 minutes. What cannot be sent is dropped and counted in
``kubetrio_events_dropped_total{reason}`` (``queue_full``, ``rate_limited``, ``send_failed``), never
retried in a way that blocks: an event is information, not state.
Messages are truncated to the API's 1 kB limit.

Unlike client-go, the spam filter spends its tokens on writes rather than on ``record``
calls, so 100 repeats folded into one write are one Event with count 100, not 25.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import trio
from prometheus_client import CollectorRegistry, Counter

from kubetrio.api.core import Event, EventSource, ObjectReference
from kubetrio.api.meta import KubeObject, ObjectMeta, format_time
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.correlator import (
    LRU,
    Aggregator,
    EventKey,
    Observed,
    SpamFilter,
)
from kubetrio.runtime.gen.rbac import Permissions, on
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.events")

MAX_MESSAGE = 1024
# client-go's broadcaster queues at most 1000 events (maxQueuedEvents); repeats of a queued
# one take no room.
QUEUE_SIZE = 1000
# Writes in flight at once, never two about one object (its Events stay in order and a repeat
# patches the Event its predecessor created). client-go writes one at a time; here the
# controllers' workers share the API server with the sender, and with one writer a large pool
# coming up filled the queue and Events were dropped; with eight, none were
# (tests/bench/scale.py; docs/performance.md has the figures).
WRITERS = 8

# What a controller recording events needs: each goes to the namespace of its object (the
# ``default`` namespace for cluster-scoped ones), so anywhere. Repeats are patches.
RBAC = Permissions(cluster=(on(Event.KIND, "create", "patch"),))


DROP_REASONS = ("queue_full", "rate_limited", "send_failed")


def dropped_counter(registry: CollectorRegistry | None) -> Counter:
    """``kubetrio_events_dropped_total{reason}``: Events recording gave up on, which a
    reconcile never waits for, so they must at least be counted."""
    counter = Counter(
        "kubetrio_events_dropped_total",
        "Events not written to the API server, by why: queue_full, rate_limited, send_failed.",
        ["reason"],
        registry=registry,
    )
    # Every reason is exported from the start at 0, so a rate over it reads 0 rather than
    # "no data" until the first drop (dashboards and alerts would see a gap).
    for reason in DROP_REASONS:
        counter.labels(reason)
    return counter


@dataclass(slots=True)
class _Pending:
    event: Event
    count: int  # records folded into this write


def _subject(key: EventKey) -> tuple[str, str, str, str]:
    """The object an Event is about: its writes never overlap."""
    return (key.api_version, key.kind, key.namespace, key.name)


class EventSender:
    """Writes the events its recorders queue, up to ``writers`` at once (never two about one
    object), off every reconcile path.

    ``run`` it in a nursery; ``close`` makes it send what is queued and return."""

    def __init__(
        self,
        client: Client,
        dropped: Counter | None = None,
        queue_size: int = QUEUE_SIZE,
        writers: int = WRITERS,
    ) -> None:
        self.client = client
        self.dropped = dropped if dropped is not None else dropped_counter(None)
        self.queue_size = queue_size
        self.writers = writers
        self._queue: OrderedDict[EventKey, _Pending] = OrderedDict()
        self._busy: set[tuple[str, str, str, str]] = set()  # subjects being written
        self._wake = trio.Event()
        self._closed = False
        self.closed = trio.Event()  # set once run has sent everything after close
        self._idle = trio.Event()  # set while nothing is queued or being written
        self._idle.set()
        self._aggregator = Aggregator(trio.current_time)
        self._spam = SpamFilter(trio.current_time)
        self._observed: LRU[EventKey, Observed] = LRU()

    def recorder(self, component: str, host: str = "") -> EventRecorder:
        """A recorder writing as ``component`` (on ``host``) through this sender."""
        return EventRecorder(self, component, host)

    def enqueue(self, key: EventKey, event: Event) -> None:
        """Queue ``event`` without waiting: folded into a pending one with the same key, or
        dropped (and counted) when the queue is full or the sender closed."""
        key = self._aggregator.aggregate(key)
        if key.message != event.message:  # combined: one Event for all similar ones
            event.message = (key.message + event.message)[:MAX_MESSAGE]
        pending = self._queue.get(key)
        if pending is not None:
            pending.count += 1
            pending.event.last_timestamp = event.last_timestamp
            pending.event.message = event.message
        elif self._closed or len(self._queue) >= self.queue_size:
            self.dropped.labels("queue_full").inc()
            log.warning("event dropped: queue full", reason=key.reason, object=key.name)
        else:
            self._queue[key] = _Pending(event, 1)
            if self._idle.is_set():
                self._idle = trio.Event()
            self._wake.set()

    def close(self) -> None:
        """Accept no more Events; ``run`` returns once the queued ones are written."""
        self._closed = True
        self._wake.set()

    async def flush(self) -> None:
        """Wait until everything recorded so far was written (or dropped)."""
        await self._idle.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write queued Events, ``writers`` at a time and one at a time per subject, until
        closed and drained."""
        slots = trio.Semaphore(self.writers)
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                await slots.acquire()
                while (key := self._next()) is None:
                    if not self._queue and not self._busy:
                        self._idle.set()
                        if self._closed:
                            self.closed.set()
                            return
                    # Woken by a new event or a finished write (its subject is free again).
                    self._wake = trio.Event()
                    await self._wake.wait()
                pending = self._queue.pop(key)
                if not self._spam.allow(key):
                    self.dropped.labels("rate_limited").inc(pending.count)
                    slots.release()
                    continue
                self._busy.add(_subject(key))
                nursery.start_soon(self._send, key, pending, slots)

    def _next(self) -> EventKey | None:
        """The oldest queued event whose object has no write in flight."""
        for key in self._queue:
            if _subject(key) not in self._busy:
                return key
        return None

    async def _send(self, key: EventKey, pending: _Pending, slots: trio.Semaphore) -> None:
        try:
            await self._write(key, pending)
        except Exception as error:  # an event is information: never let it stop others
            self.dropped.labels("send_failed").inc(pending.count)
            log.warning("could not record event", reason=key.reason, error=str(error))
        finally:
            self._busy.discard(_subject(key))
            slots.release()
            self._wake.set()

    async def _write(self, key: EventKey, pending: _Pending) -> None:
        event = pending.event
        namespace = event.metadata.namespace or "default"
        seen = self._observed.get(key)
        written: Event | None = None
        if seen is not None:
            patch: dict[str, Any] = {
                "count": seen.count + pending.count,
                "lastTimestamp": event.last_timestamp,
                "message": event.message,
            }
            try:
                written = await self.client.patch(
                    Event, seen.name, patch, namespace=seen.namespace, patch_type="merge"
                )
            except ApiError as error:
                if error.status != 404:
                    raise
                self._observed.pop(key)  # deleted (TTL): write it afresh
        if written is None:
            event.count = pending.count
            written = await self.client.create(Event, event, namespace=namespace)
        self._observed.put(
            key,
            Observed(
                name=written.metadata.name,
                namespace=written.metadata.namespace or namespace,
                count=written.count or pending.count,
                first_timestamp=written.first_timestamp,
            ),
        )


class EventRecorder:
    """Records Events about objects as ``component``; ``record`` never waits on the API."""

    def __init__(self, sender: EventSender, component: str, host: str = "") -> None:
        self.sender = sender
        self.component = component
        self.host = host

    def record(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        """``type_`` is "Normal" or "Warning"; ``reason`` is UpperCamelCase, short."""
        kind = obj.KIND
        meta = obj.metadata
        message = message[:MAX_MESSAGE]
        now = format_time(datetime.now(UTC))
        event = Event(
            metadata=ObjectMeta(
                name=f"{meta.name}.{uuid.uuid4().hex[:16]}", namespace=meta.namespace or "default"
            ),
            involved_object=ObjectReference(
                api_version=kind.api_version,
                kind=kind.kind,
                namespace=meta.namespace,
                name=meta.name,
                uid=meta.uid,
                resource_version=meta.resource_version,
            ),
            reason=reason,
            message=message,
            type=type_,
            count=1,
            first_timestamp=now,
            last_timestamp=now,
            source=EventSource(component=self.component, host=self.host),
            reporting_component=self.component,
        )
        key = EventKey(
            self.component, self.host, kind.api_version, kind.kind, meta.namespace or "",
            meta.name or "", meta.uid or "", type_, reason, message,
        )  # fmt: skip
        self.sender.enqueue(key, event)

    def recordf(self, obj: KubeObject, type_: str, reason: str, fmt: str, *args: object) -> None:
        """``record`` with a %-style message, as client-go's ``Eventf``."""
        self.record(obj, type_, reason, fmt % args if args else fmt)
