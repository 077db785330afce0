"""The informer: one LIST+WATCH of a kind kept in a store, with event handlers.

The reflector loop (client-go semantics):

* a streaming list where the server has them (``sendInitialEvents``, as client-go ≥ 1.35
  does): one WATCH that first sends every existing object, then a bookmark marking the end of
  that initial state, then goes on as a watch. Objects are decoded as they arrive, so the sync
  never holds a whole list's JSON — a real kube-apiserver answers an informer's first LIST
  unpaged from its watch cache (it ignores ``limit`` at ``resourceVersion=0``), which for 10 000
  pods is one 90 MB body. A server that refuses streaming lists (400/422: older servers, or the
  feature turned off) gets LIST+WATCH from then on; any other failure before the end bookmark
  falls back to one LIST;
* otherwise LIST, then WATCH from the list's resourceVersion with bookmarks and a randomised
  ``timeoutSeconds``; a watch that ends cleanly or is cut mid-stream (a flaky load balancer)
  is resumed from the last resourceVersion seen at once — waiting there would only make the
  cache stale;
* 410 Gone (the server no longer has that history) → relist at the last resourceVersion; if the
  server cannot serve that either, relist from scratch;
* any other failure → jittered exponential backoff, then resume; a healthy watch (one that
  delivered events or lasted a while) resets the backoff, so one old failure costs nothing; a
  first LIST refused for good (CRD missing, forbidden, unauthorized) also ends ``wait_for_sync``
  with a ``CacheSyncError`` naming the kind and the reason, so a manager fails fast instead of
  waiting out its timeout;
* an object that does not fit the typed view (a "poison object", see ``undecodable``) is kept
  out of the store, logged once per resourceVersion and listed in ``undecodable``; the watch
  goes on, and the store follows when the object is fixed or deleted;
* a relist replaces the store and hands the handlers only the difference: adds, updates for
  changed resourceVersions, and deletes (as ``DeletedFinalStateUnknown`` tombstones) for
  objects that vanished while the watch was down — so handlers never miss a final delete and
  never see an update after a delete.

Handlers run synchronously in the reflector task in event order; they should only enqueue.
A handler that raises is logged and skipped, never allowed to stop the informer.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

from kubetrio.api.meta import KubeObject, ObjectList, kind_of
from kubetrio.runtime.cache.backoff import Backoff
from kubetrio.runtime.cache.intern import share_strings
from kubetrio.runtime.cache.store import (
    DeletedFinalStateUnknown,
    IndexFunc,
    Lister,
    Store,
)
from kubetrio.runtime.cache.syncfailure import CacheSyncError, sync_failure
from kubetrio.runtime.cache.undecodable import Undecodable
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import WATCH_CUT, Client, WatchEvent
from kubetrio.runtime.controller.queue import ObjectKey

T = TypeVar("T", bound=KubeObject)

log = logging.getLogger("kubetrio.informer")

MIN_WATCH_TIMEOUT = 300  # client-go: a random watch timeout in [5, 10) minutes
# A watch that ends without an event sooner than this is treated as a failure (backoff), so a
# server that accepts and at once closes every watch cannot make the informer spin (client-go's
# "very short watch" rule).
HEALTHY_WATCH_SECONDS = 1.0
LIST_PAGE = 500  # client-go's pager default page size (reflector's initial and later lists)


@dataclass(frozen=True, slots=True)
class EventHandler(Generic[T]):
    """Callbacks for one consumer; any may be None. ``is_initial`` marks list-time adds."""

    on_add: Callable[[T, bool], None] | None = None
    on_update: Callable[[T, T], None] | None = None
    on_delete: Callable[[T | DeletedFinalStateUnknown[T]], None] | None = None


def _log_failure(verb: str, kind: str, error: ApiError) -> None:
    """A failed list or watch, which the informer retries with backoff. A 429 is the server
    asking for patience (its watch cache for the kind is (re)initializing, as after a CRD
    changes, or it sheds load): the retry is the whole answer, so it is no warning."""
    if error.status == 429:
        log.info("%s throttled, retrying kind=%s error=%s", verb, kind, error)
    else:
        log.warning("%s failed kind=%s error=%s", verb, kind, error)


class Informer(Generic[T]):
    """Keeps ``store`` equal to the server's view of one kind (optionally narrowed)."""

    def __init__(
        self,
        client: Client,
        kind: type[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        transform: Callable[[T], T] | None = None,
        streaming_lists: bool = True,
    ) -> None:
        self.client = client
        # Cleared for good once the server refuses a streaming list.
        self.streaming_lists = streaming_lists
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.transform = transform
        self.store: Store[T] = Store()
        self.lister: Lister[T] = Lister(self.store)
        self.last_resource_version = ""
        self._handlers: list[EventHandler[T]] = []
        self._synced = trio.Event()
        self._settled = trio.Event()  # synced, or the first list failed for good
        self.sync_error: CacheSyncError | None = None
        self._backoff = Backoff()
        self.relists = 0  # observable by tests: how often the store was rebuilt
        # Objects the server holds that do not fit ``kind``, by store key (for metrics, probes).
        self.undecodable: dict[ObjectKey, Undecodable] = {}

    @property
    def name(self) -> str:
        return kind_of(self.kind).group_resource

    # -- consumers ------------------------------------------------------------------------

    def add_handler(self, handler: EventHandler[T]) -> None:
        """Subscribe; a late subscriber first gets an add for every object already stored."""
        self._handlers.append(handler)
        if self._synced.is_set() and handler.on_add is not None:
            for obj in self.store.values():
                self._call(handler.on_add, obj, True)

    def add_index(self, name: str, func: IndexFunc[T]) -> None:
        self.store.add_index(name, func)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Until the first list; raises ``CacheSyncError`` if it was refused for good (the
        informer keeps retrying: a CRD installed later is picked up)."""
        await self._settled.wait()
        if not self._synced.is_set():
            assert self.sync_error is not None  # settled without syncing: it failed for good
            raise self.sync_error

    # -- the reflector --------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled."""
        async with trio.open_nursery() as nursery:
            if self.resync_period:
                nursery.start_soon(self._resync_loop, self.resync_period)
            await self._list_and_watch()

    async def _list_and_watch(self) -> None:
        need_list = True
        list_instead = False  # a streaming list just failed: this round lists
        while True:
            streaming = need_list and self.streaming_lists and not list_instead
            list_instead = False
            if need_list and not streaming:
                try:
                    await self._relist()
                except ApiError as error:
                    _log_failure("list", self.name, error)
                    final = sync_failure(kind_of(self.kind), self.namespace, error)
                    if final is not None and not self._settled.is_set():
                        self.sync_error = final  # kept: a later 503 does not make it syncable
                        self._settled.set()
                    await self._backoff.wait()
                    continue
                need_list = False
            started = trio.current_time()
            outcome, delivered, listed = await self._watch_once(streaming)
            if streaming:
                if not listed:
                    list_instead = self._streaming_failed(outcome)
                    continue
                need_list = False
            healthy = delivered or trio.current_time() - started >= HEALTHY_WATCH_SECONDS
            if healthy:
                self._backoff.reset()
            if healthy and (outcome is None or outcome.reason == WATCH_CUT):
                continue  # a clean end or a cut: resume from the last RV at once
            if outcome is None:
                outcome = ApiError(0, "EmptyWatch", "the watch ended at once with no event")
            if outcome.status == 410:
                log.info("watch history expired kind=%s rv=%s", self.name, outcome.message)
                need_list = True
                continue
            _log_failure("watch", self.name, outcome)
            await self._backoff.wait()

    def _streaming_failed(self, outcome: ApiError | None) -> bool:
        """A streaming list ended before its initial state was complete: whether to fall
        back to one LIST (True), after turning streaming off for good if it was refused."""
        if outcome is not None and outcome.status in (400, 422):
            self.streaming_lists = False
            log.info("no streaming lists on this server, listing kind=%s", self.name)
        return True

    async def _relist(self) -> None:
        """LIST at the last RV (or from scratch) and reconcile the store with the result."""
        resource_version = self.last_resource_version or "0"
        poisons: list[Undecodable] = []
        try:
            result = await self._list(resource_version, poisons.append)
        except ApiError as error:
            if error.status not in (410, 504) or resource_version == "":
                raise
            # The server cannot serve that resourceVersion any more: a consistent read.
            poisons.clear()
            result = await self._list("", poisons.append)
        keyed = (((o.metadata.namespace, o.metadata.name), o) for o in result.items)
        self._replace(keyed, poisons)
        self.last_resource_version = result.metadata.resource_version
        self.relists += 1
        if not self._synced.is_set():
            self._synced.set()
            self._settled.set()

    async def _list(
        self, resource_version: str, on_undecodable: Callable[[Undecodable], None]
    ) -> ObjectList[T]:
        return await self.client.list(
            self.kind,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=resource_version,
            # Pages of 500 from scratch, as client-go's reflector asks: the sync peak holds one
            # page of JSON, not the whole response (an expired continue falls back to a full
            # list). A relist at a later resourceVersion is unpaged, as there: paged, it would be
            # an exact read (410 once compacted, from etcd, not the watch cache).
            limit=LIST_PAGE if resource_version in ("", "0") else 0,
            on_undecodable=on_undecodable,
            # Interned as decoded, so the copies it drops leave no holes (runtime/cache/intern.py).
            each=self._ingest,
        )

    def _ingest(self, obj: T) -> T:
        obj = share_strings(obj)
        return self.transform(obj) if self.transform is not None else obj

    def _replace(
        self, items: Iterable[tuple[tuple[str, str], T]], poisons: list[Undecodable]
    ) -> None:
        """Make the store hold ``items``, each under its plain ``(namespace, name)`` key, which
        the store keeps as it is: a key built here and dropped once per object would leave a
        hole beside every cached one."""
        initial = not self._synced.is_set()
        previous, self.undecodable = self.undecodable, {}
        for poison in poisons:
            self._note_undecodable(poison, previous.get(poison.key))
        seen = set()
        for key, obj in items:
            seen.add(key)
            old = self.store.put(key, obj)
            if old is None:
                self._emit_add(obj, initial)
            elif old.metadata.resource_version != obj.metadata.resource_version:
                self._emit_update(old, obj)
        for key in set(self.store.keys()) - seen:
            gone = self.store.remove(key)
            if gone is not None:
                self._emit_delete(DeletedFinalStateUnknown(key, gone))

    async def _watch_once(self, initial: bool = False) -> tuple[ApiError | None, bool, bool]:
        """One watch request: None when it ended cleanly, else the error that ended it;
        whether it delivered any event (a sign of a healthy watch); and, for a streaming list
        (``initial``), whether its initial state was complete and replaced the store."""
        failure: ApiError | None = None
        delivered = False
        state = _InitialState[T]() if initial else None

        def deliver(batch: list[WatchEvent[T]]) -> bool:
            # In the reading task: no channel, no task switch per batch.
            nonlocal failure, delivered
            for event in batch:
                if event.type == "ERROR":
                    failure = event.error
                    return True
                delivered = True
                if state is None or state.done:
                    self._apply(event)
                elif state.take(event, self._ingest):
                    self._replace(state.objects.items(), state.poisons)
                    self.last_resource_version = state.resource_version
                    self.relists += 1
                    self._synced.set()
                    self._settled.set()
            return False

        ended = await self.client.watch_batches(
            self.kind,
            deliver,
            namespace=self.namespace,
            resource_version=self.last_resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=int(MIN_WATCH_TIMEOUT * (1 + random.random())),
            send_initial_events=initial,
        )
        return failure or ended, delivered, state is not None and state.done

    def _apply(self, event: WatchEvent[T]) -> None:
        if event.resource_version:
            self.last_resource_version = event.resource_version
        if event.undecodable is not None:
            self._apply_undecodable(event.type, event.undecodable)
            return
        obj = event.obj
        if obj is None:
            return  # a bookmark: only the resourceVersion moves
        obj = self._ingest(obj)
        meta = obj.metadata
        key = (meta.namespace, meta.name)  # the store's own plain key: no ObjectKey per event
        if self.undecodable:
            self.undecodable.pop(ObjectKey(*key), None)  # fixed (or deleted): it fits again
        if event.type == "DELETED":
            # Unknown to the store means its delete was already delivered (as a tombstone).
            if self.store.remove(key) is not None:
                self._emit_delete(obj)
            return
        old = self.store.put(key, obj)
        if old is None:
            self._emit_add(obj, False)
        else:
            self._emit_update(old, obj)

    def _apply_undecodable(self, event_type: str, poison: Undecodable) -> None:
        """Keep a poison object out of the store; an older version that fitted goes too."""
        if event_type == "DELETED":
            self.undecodable.pop(poison.key, None)
        else:
            self._note_undecodable(poison, self.undecodable.get(poison.key))
        gone = self.store.remove(poison.key)
        if gone is not None:
            self._emit_delete(DeletedFinalStateUnknown(poison.key, gone))

    def _note_undecodable(self, poison: Undecodable, known: Undecodable | None) -> None:
        """Record a poison object, logging it once per resourceVersion (relists repeat it)."""
        self.undecodable[poison.key] = poison
        if known is None or known.resource_version != poison.resource_version:
            log.warning(
                "undecodable object kept out of the cache kind=%s object=%s rv=%s error=%s",
                self.name,
                poison,
                poison.resource_version,
                poison.error,
            )

    async def _resync_loop(self, period: float) -> None:
        """Periodically hand every stored object to ``on_update`` (old is new)."""
        while True:
            await trio.sleep(period)
            if self._synced.is_set():
                for obj in self.store.values():
                    self._emit_update(obj, obj)

    # -- delivery -------------------------------------------------------------------------

    # The three emitters run once per event: the handler call and its guard are inlined.

    def _emit_add(self, obj: T, initial: bool) -> None:
        for handler in self._handlers:
            if handler.on_add is not None:
                try:
                    handler.on_add(obj, initial)
                except Exception:
                    log.exception("event handler failed kind=%s", self.name)

    def _emit_update(self, old: T, new: T) -> None:
        for handler in self._handlers:
            if handler.on_update is not None:
                try:
                    handler.on_update(old, new)
                except Exception:
                    log.exception("event handler failed kind=%s", self.name)

    def _emit_delete(self, obj: T | DeletedFinalStateUnknown[T]) -> None:
        for handler in self._handlers:
            if handler.on_delete is not None:
                try:
                    handler.on_delete(obj)
                except Exception:
                    log.exception("event handler failed kind=%s", self.name)

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("event handler failed kind=%s", self.name)


class _InitialState(Generic[T]):
    """A streaming list's initial events, gathered until the bookmark that ends them; the
    informer's resourceVersion moves only then, so a stream cut short resumes nothing."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], T] = {}
        self.poisons: list[Undecodable] = []
        self.resource_version = ""
        self.done = False

    def take(self, event: WatchEvent[T], ingest: Callable[[T], T]) -> bool:
        """Gather one event; True when it was the end of the initial state."""
        if event.resource_version:
            self.resource_version = event.resource_version
        if event.type == "BOOKMARK":
            self.done = event.initial_events_end
            return self.done
        if event.undecodable is not None:
            self.poisons.append(event.undecodable)
            return False
        if event.obj is not None:
            obj = ingest(event.obj)
            key = (obj.metadata.namespace, obj.metadata.name)
            if event.type == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = obj
        return False
