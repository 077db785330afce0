"""One HTTP watch: replay from the event log, then follow it, one JSON object per line (or
one length-prefixed protobuf frame per event, when negotiated).

The writer side costs O(1) per event (see eventlog); this reader side walks its own cursor,
re-checks selectors so objects moving in or out of a selection arrive as ADDED / DELETED, and
sends everything that is ready in one chunk.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry, TooOld, WatchEvent
from kubetrio.emulator.faults import Faults
from kubetrio.emulator.http import Cut, StreamWriter
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store

Encoder = Callable[[str, Entry], bytes]  # (event type, object) -> one line


PRETIMEOUT = 2.0  # seconds before a watch's timeoutSeconds when the last bookmark is due
# Initial events (a watch from "0" or a streaming list) are sent this many to a write.
INITIAL_SLICE = 500


@dataclass(slots=True)
class WatchSpec:
    rt: ResourceType
    namespace: str | None
    pred: Callable[[dict[str, Any]], bool] | None
    resource_version: str  # "" or "0": initial state first
    bookmarks: bool
    bookmark_interval: float
    timeout: float | None
    cut_after: float | None
    encode: Encoder | None = None  # None: the shared cached line
    initial_events: bool = False  # sendInitialEvents: state, then an initial-events-end bookmark
    encode_error: Callable[[dict[str, Any]], bytes] | None = None  # None: a JSON ERROR line
    # Objects in the watched version (a CRD's conversion webhook); None: as stored.
    convert: Callable[[list[Entry]], Awaitable[list[Entry]]] | None = None


def plain_line(type_: str, entry: Entry) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + entry.raw + b"}\n"


def expired_status(exc: TooOld) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": str(exc),
        "reason": "Expired",
        "code": 410,
    }


def expired_line(exc: TooOld) -> bytes:
    return msgspec.json.encode({"type": "ERROR", "object": expired_status(exc)}) + b"\n"


class Watch:
    def __init__(self, store: Store, faults: Faults, spec: WatchSpec) -> None:
        self.store = store
        self.faults = faults
        self.spec = spec
        self.log = store.log_for(spec.rt)
        self.initial: list[Entry] = []
        self.error: TooOld | None = None
        self.last_rv = store.rv
        self.snapshot_rv = store.rv
        self._shown: dict[int, Entry] = {}  # stored entry id -> converted, for one batch
        # Position chosen now, synchronously, so nothing written after the request is missed.
        rv = spec.resource_version
        if rv in ("", "0") or spec.initial_events:
            self.initial = [
                e
                for e in store.iter(spec.rt, spec.namespace)
                if spec.pred is None or spec.pred(e.obj)
            ]
            self.seq = self.log.end
        else:
            self.last_rv = int(rv)
            try:
                self.seq = self.log.seq_after(int(rv), store.rv)
            except TooOld as exc:
                self.error = exc
                self.seq = self.log.end
        self.sent_rv = self.last_rv  # the newest position the client was told of

    def expire(self) -> None:
        """Answer with 410 only, as for a position compacted away (an injected fault)."""
        self.initial = []
        self.spec.initial_events = False
        self.error = TooOld(self.last_rv, self.store.rv)

    def _expired(self, exc: TooOld) -> bytes:
        enc = self.spec.encode_error
        return expired_line(exc) if enc is None else enc(expired_status(exc))

    def _line(self, type_: str, ev: WatchEvent) -> bytes:
        enc = self.spec.encode
        entry = self._shown.get(id(ev.entry), ev.entry)
        if enc is not None:
            return enc(type_, entry)
        if entry is not ev.entry:
            return plain_line(type_, entry)
        return ev.line() if type_ == ev.type else plain_line(type_, ev.entry)

    async def _converted(self, out: StreamWriter, entries: list[Entry]) -> list[Entry] | None:
        """``entries`` in the watched version; None (after an ERROR event) when the
        conversion failed, which ends the watch as kube-apiserver ends it."""
        if self.spec.convert is None:
            return entries
        try:
            return await self.spec.convert(entries)
        except ApiError as exc:
            status = exc.status()
            enc = self.spec.encode_error
            line = (
                msgspec.json.encode({"type": "ERROR", "object": status}) + b"\n"
                if enc is None
                else enc(status)
            )
            await out.send(line)
            return None

    def _shows(self, ev: WatchEvent) -> bool:
        """Whether ``_render`` makes a line of ``ev`` (it then shows ``ev.entry``)."""
        spec = self.spec
        if spec.namespace is not None and ev.namespace != spec.namespace:
            return False
        pred = spec.pred
        if pred is None or pred(ev.entry.obj):
            return True
        return ev.type == "MODIFIED" and ev.prev is not None and pred(ev.prev.obj)

    def _render(self, ev: WatchEvent) -> bytes | None:
        spec = self.spec
        if spec.namespace is not None and ev.namespace != spec.namespace:
            return None
        pred = spec.pred
        if pred is None:
            return self._line(ev.type, ev)
        if ev.type == "MODIFIED":
            now = pred(ev.entry.obj)
            before = ev.prev is not None and pred(ev.prev.obj)
            if now and before:
                return self._line("MODIFIED", ev)
            if now:
                return self._line("ADDED", ev)
            if before:
                return self._line("DELETED", ev)
            return None
        return self._line(ev.type, ev) if pred(ev.entry.obj) else None

    def _bookmark(self, initial_events_end: bool = False) -> bytes:
        rt = self.spec.rt
        rv = self.snapshot_rv if initial_events_end else self.store.rv
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata}
        if self.spec.encode is not None:
            return self.spec.encode("BOOKMARK", Entry(obj, self.store.rv))
        return msgspec.json.encode({"type": "BOOKMARK", "object": obj}) + b"\n"

    async def run(self, out: StreamWriter) -> None:
        scope = trio.CancelScope()
        wid = self.faults.register_watch(scope.cancel)
        try:
            with scope:
                if self.spec.cut_after is not None:
                    scope.deadline = trio.current_time() + self.spec.cut_after
                with trio.move_on_after(self.spec.timeout if self.spec.timeout else math.inf):
                    await self._follow(out)
        finally:
            self.faults.unregister_watch(wid)
        if scope.cancelled_caught:  # only a cut cancels this scope; timeouts end cleanly
            raise Cut

    async def _follow(self, out: StreamWriter) -> None:
        if self.initial:
            initial = await self._converted(out, self.initial)
            if initial is None:
                return
            # In slices: the whole state joined at once would hold it twice (its lines and
            # their join: 170 MB for 10 000 kubelet-shaped pods) for as long as it takes to send.
            self.initial = []
            for at in range(0, len(initial), INITIAL_SLICE):
                piece = initial[at : at + INITIAL_SLICE]
                await out.send(b"".join([self._line_initial(e) for e in piece]))
        if self.spec.initial_events and self.spec.bookmarks:
            # The state sent so far is as of the snapshot taken at open; later events follow.
            # Only a client that takes bookmarks is told where it ends.
            await out.send(self._bookmark(initial_events_end=True))
        if self.error is not None:
            await out.send(self._expired(self.error))
            return
        spec = self.spec
        next_bookmark = trio.current_time() + spec.bookmark_interval
        # kube-apiserver's watch cache also sends one 2 s before the watch times out, once it
        # has seen anything newer than the watch's position (PRETIMEOUT, below).
        pretimeout = (
            trio.current_time() + spec.timeout - PRETIMEOUT
            if spec.bookmarks and spec.timeout and spec.timeout > PRETIMEOUT
            else math.inf
        )
        while True:
            try:
                events = self.log.read(self.seq)
            except TooOld:
                # Fell behind the window: the position it needs is gone (410, like a re-watch
                # from its last resourceVersion would get).
                await out.send(
                    self._expired(TooOld(self.last_rv, self.log.oldest_rv(self.store.rv)))
                )
                return
            if events:
                self.seq += len(events)
                self.last_rv = events[-1].rv
                if self.spec.convert is not None:
                    # Only what this watch shows is converted (kube filters, then converts):
                    # another namespace's object whose conversion fails must not end it.
                    wanted = [ev for ev in events if self._shows(ev)]
                    shown = await self._converted(out, [ev.entry for ev in wanted])
                    if shown is None:
                        return
                    self._shown = {id(ev.entry): e for ev, e in zip(wanted, shown, strict=True)}
                rendered = [(ev.rv, self._render(ev)) for ev in events]
                chunk = [line for _, line in rendered if line is not None]
                self._shown = {}
                if chunk:
                    await out.send(b"".join(chunk))
                    self.sent_rv = max(rv for rv, line in rendered if line is not None)
                continue
            if spec.bookmarks and trio.current_time() >= next_bookmark:
                await out.send(self._bookmark())
                next_bookmark = trio.current_time() + spec.bookmark_interval
                continue
            if trio.current_time() >= pretimeout:
                pretimeout = math.inf
                if self.store.rv > self.sent_rv:
                    await out.send(self._bookmark())
                continue
            deadline = min(next_bookmark, pretimeout) if spec.bookmarks else math.inf
            with trio.move_on_at(deadline):
                await self.log.wait_beyond(self.seq)

    def _line_initial(self, entry: Entry) -> bytes:
        enc = self.spec.encode
        return enc("ADDED", entry) if enc is not None else plain_line("ADDED", entry)
