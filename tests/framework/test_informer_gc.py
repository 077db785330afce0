"""An informer's cache costs the garbage collector nothing per cached object: listed (paged)
and watched objects alike leave no ``ObjectKey`` (a tuple subclass the collector tracks for
good) behind, so a full collection in a manager caching 100 000 objects walks no more than in
an empty one."""

from __future__ import annotations

import gc

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.queue import ObjectKey
from tests.helpers.kube import configmap

pytestmark = pytest.mark.slow

LISTED = 1200  # three pages
WATCHED = 300


def live_object_keys() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is ObjectKey)


def create(emu: Emulator, prefix: str, count: int) -> None:
    for i in range(count):
        body = configmap(f"{prefix}-{i}", v=str(i))
        body["metadata"]["namespace"] = "default"
        emu.create(body)


async def test_listed_and_watched_objects_leave_no_tracked_keys(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    create(emu, "listed", LISTED)
    informer = Informer(Client.from_url(emu.url, token=emu.token), ConfigMap)
    all_in = trio.Event()

    def on_add(obj: ConfigMap, initial: bool) -> None:
        if len(informer.store) == LISTED + WATCHED:
            all_in.set()

    informer.add_handler(EventHandler(on_add=on_add))
    before = live_object_keys()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            create(emu, "watched", WATCHED)
            await all_in.wait()
            assert live_object_keys() - before < 50
            keys = informer.store.keys()
            assert {key.name for key in keys} >= {"listed-0", "watched-299"}
            nursery.cancel_scope.cancel()
