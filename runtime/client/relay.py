"""Handing items from a worker thread to trio without the thread waiting on trio.

``trio.from_thread.run`` costs a full round trip per call: the thread blocks until the trio
task ran. A watch stream delivers events one HTTP chunk at a time, so a round trip per chunk
made the thread, not the API server, the bottleneck. Here the thread appends to a deque and
asks trio (idempotently: one pending wake-up at most) to wake the consumer, which drains
whatever accumulated — batches form by themselves under load.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Generic, TypeVar

import trio

X = TypeVar("X")


class ThreadRelay(Generic[X]):
    """Create in trio; ``put_many`` from one thread; ``batches()`` in trio; ``close()`` in trio."""

    def __init__(self) -> None:
        self._items: deque[X] = deque()
        self._token = trio.lowlevel.current_trio_token()
        self._ready = trio.Event()
        self._closed = False

    def put_many(self, items: Iterable[X]) -> None:
        """Thread side. Never blocks; safe if the trio run already ended."""
        self._items.extend(items)
        with contextlib.suppress(trio.RunFinishedError):  # nobody is left to consume
            self._token.run_sync_soon(self._wake, idempotent=True)

    def _wake(self) -> None:
        self._ready.set()

    def close(self) -> None:
        """Trio side: no more items will come; ``batches`` ends once drained."""
        self._closed = True
        self._ready.set()

    async def batches(self) -> AsyncIterator[list[X]]:
        items = self._items
        while True:
            await self._ready.wait()
            self._ready = trio.Event()
            batch: list[X] = []
            while items:  # popleft, not list+clear: the thread may append meanwhile
                batch.append(items.popleft())
            if batch:
                yield batch
            if self._closed and not items:
                return
