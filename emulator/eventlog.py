"""The bounded per-resource history that every watch reads from.

A write appends one event to a ring buffer and swaps one trio.Event: O(1) whatever the number of
watchers. Each watcher keeps its own cursor (a sequence number) and encodes nothing itself: the
event's wire line is built once, lazily, and shared. Writers never wait for readers; a reader
that falls more than the window behind finds its cursor evicted and gets 410 Gone.
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio


class Entry:
    """One stored object version. The dict is never mutated once stored; its JSON encoding is
    computed at most once and reused by every LIST page and watch event that carries it."""

    __slots__ = ("_raw", "obj", "rv")

    def __init__(self, obj: dict[str, Any], rv: int, raw: bytes | None = None) -> None:
        self.obj = obj
        self.rv = rv
        self._raw = raw

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = msgspec.json.encode(self.obj)
        return self._raw

    def clone(self) -> dict[str, Any]:
        """A private deep copy, decoded from the cached bytes (faster than copy.deepcopy)."""
        out: dict[str, Any] = msgspec.json.decode(self.raw)
        return out


class WatchEvent:
    __slots__ = ("_line", "entry", "prev", "rv", "type")

    def __init__(self, type_: str, entry: Entry, prev: Entry | None) -> None:
        self.type = type_
        self.entry = entry
        self.prev = prev
        self.rv = entry.rv
        self._line: bytes | None = None

    def line(self) -> bytes:
        if self._line is None:
            self._line = (
                b'{"type":"' + self.type.encode() + b'","object":' + self.entry.raw + b"}\n"
            )
        return self._line

    @property
    def namespace(self) -> str:
        ns: str = (self.entry.obj.get("metadata") or {}).get("namespace", "")
        return ns

    def __repr__(self) -> str:
        md = self.entry.obj.get("metadata") or {}
        return f"WatchEvent({self.type} {md.get('namespace', '')}/{md.get('name')} rv={self.rv})"


class TooOld(Exception):
    """The requested position has left the window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class EventLog:
    def __init__(self, capacity: int, start_rv: int) -> None:
        self.capacity = max(1, capacity)
        self._buf: list[WatchEvent | None] = [None] * self.capacity
        self.start = 0  # first retained sequence number
        self.end = 0  # next sequence number to write
        # Every event with rv <= compacted_rv may be missing from the buffer.
        self.compacted_rv = start_rv
        self._wake = trio.Event()

    def append(self, ev: WatchEvent) -> None:
        if self.end - self.start == self.capacity:
            old = self._buf[self.start % self.capacity]
            assert old is not None
            self.compacted_rv = old.rv
            self.start += 1
        self._buf[self.end % self.capacity] = ev
        self.end += 1
        wake, self._wake = self._wake, trio.Event()
        wake.set()

    def expire(self, current_rv: int) -> None:
        """Forget all history: any position before now becomes 410."""
        self.start = self.end
        self.compacted_rv = current_rv
        wake, self._wake = self._wake, trio.Event()
        wake.set()

    def oldest_rv(self, current_rv: int) -> int:
        if self.start < self.end:
            ev = self._buf[self.start % self.capacity]
            assert ev is not None
            return ev.rv
        return current_rv

    def seq_after(self, rv: int, current_rv: int) -> int:
        """Sequence number of the first event newer than ``rv``; TooOld if some may be lost."""
        if rv < self.compacted_rv:
            raise TooOld(rv, self.oldest_rv(current_rv))
        lo, hi = self.start, self.end
        while lo < hi:
            mid = (lo + hi) // 2
            ev = self._buf[mid % self.capacity]
            assert ev is not None
            if ev.rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def read(self, seq: int, max_events: int = 1000) -> list[WatchEvent]:
        """Events from ``seq`` on; TooOld when ``seq`` has been evicted."""
        if seq < self.start:
            raise TooOld(-1, self.compacted_rv)
        stop = min(self.end, seq + max_events)
        out: list[WatchEvent] = []
        cap = self.capacity
        for s in range(seq, stop):
            ev = self._buf[s % cap]
            assert ev is not None
            out.append(ev)
        return out

    async def wait_beyond(self, seq: int) -> None:
        """Return once an event with sequence >= ``seq`` exists (or history was expired)."""
        while self.end <= seq and self.start <= seq:
            await self._wake.wait()

    def history(self) -> list[WatchEvent]:
        return self.read(self.start, self.end - self.start) if self.end > self.start else []
