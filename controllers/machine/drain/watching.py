"""Waiting for the cache to show something, without polling and without losing a wake-up.

MCM's drain polled the API every 5 s and fed VolumeAttachment events to waiters through
20-slot buffers that dropped events when full, so a re-attachment could be missed and the
drain sat out its timeout. Here a waiter re-checks its condition against the informer's cache
after every change the informer applies. Nothing is buffered, so nothing can be dropped: a
flood of unrelated events costs cheap re-checks, never a missed one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from kubetrio.runtime.informer import EventHandler, Informer


class CacheChanges:
    """Wakes every waiter whenever the informer applied a change."""

    def __init__(self, informer: Informer[Any]) -> None:
        self._changed = trio.Event()
        informer.add_handler(
            EventHandler(
                on_add=lambda *_: self._notify(),
                on_update=lambda *_: self._notify(),
                on_delete=lambda *_: self._notify(),
            )
        )

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, condition: Callable[[], bool], deadline: float) -> bool:
        """True once ``condition()`` holds; False if ``deadline`` (trio clock) came first."""
        with trio.move_on_at(deadline):
            while not condition():
                await self._changed.wait()
            return True
        return condition()

    async def next_change(self) -> None:
        """Returns after the informer's next change (whatever it is)."""
        await self._changed.wait()
