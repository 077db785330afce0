"""List, then watch, one resource for the mirror, for as long as the run lasts.

The first list fills the mirror before the simulation's first pass reads it; after that, every
event goes to ``on_event``. A watch that ends is resumed from the last resourceVersion seen;
one whose history is gone (410) is replaced by a fresh list, which ``on_relist`` turns into the
events that list implies (objects gone meanwhile included). Failures are retried with a capped
backoff: the simulation never stops because the API server blinked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import trio

from kubetrio.api.registry import KindInfo
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, WatchEvent

log = logging.getLogger("kubetrio.sim")

Obj = dict[str, Any]
RETRY_MIN, RETRY_MAX = 0.5, 10.0


class Reflector:
    def __init__(
        self,
        client: Client,
        kind: KindInfo,
        on_event: Callable[[str, Obj], None],
        on_relist: Callable[[list[Obj]], None],
    ) -> None:
        self.client = client
        self.kind = kind
        self.on_event = on_event
        self.on_relist = on_relist
        self.version = ""

    async def list(self) -> None:
        """One full list handed to ``on_relist``; retried until it succeeds."""
        delay = RETRY_MIN
        while True:
            try:
                items, self.version = await self.client.list_dicts(self.kind)
            except ApiError as error:
                log.info("simulation list failed kind=%s err=%s", self.kind.kind, error)
                await trio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            self.on_relist(items)
            return

    async def watch(self) -> None:
        """Follow the resource from the last list on; until cancelled."""
        delay = RETRY_MIN
        while True:
            send, receive = trio.open_memory_channel[list[WatchEvent[Obj]]](64)
            expired = failed = False
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(
                        self.client.watch_dicts, self.kind, send, resource_version=self.version
                    )
                )
                async with receive:
                    async for batch in receive:
                        for event in batch:
                            if event.type == "ERROR":
                                error = event.error
                                expired = error is not None and error.status == 410
                                failed = not expired and error is not None and error.status > 0
                                if failed:
                                    log.info(
                                        "simulation watch failed kind=%s err=%s",
                                        self.kind.kind,
                                        error,
                                    )
                                continue
                            if event.resource_version:
                                self.version = event.resource_version
                            if event.obj is not None:
                                self.on_event(event.type, event.obj)
            if expired:
                await self.list()
            if failed:
                await trio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
            else:
                delay = RETRY_MIN
