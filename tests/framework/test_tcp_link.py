"""``tcp_link``: a client through it reaches the server; cut, its requests fail and a watch in
flight ends; restored, requests pass again."""

from __future__ import annotations

import pytest
import trio

from kubetrio.api.core import Namespace
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, WatchEvent
from kubetrio.testing import tcp_link


async def test_a_cut_link_fails_requests_and_ends_watches_until_restored(
    emulator: Emulator,
) -> None:
    scheme, _, port = emulator.url.rpartition(":")
    async with tcp_link(int(port)) as link:
        client = Client.from_kubeconfig(
            str(emulator.kubeconfig_path), server=link.url(scheme.split(":")[0])
        )
        assert (await client.get(Namespace, "default")).metadata.name == "default"
        send, receive = trio.open_memory_channel[list[WatchEvent[Namespace]]](16)
        events: list[WatchEvent[Namespace]] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: client.watch(Namespace, send))
            async for batch in receive:
                events.extend(batch)
                if any(e.type == "ADDED" for e in batch):
                    link.cut()  # the watch is up: cut it
        assert events[-1].type == "ERROR", events
        with pytest.raises(ApiError):
            await client.get(Namespace, "default")
        link.restore()
        assert (await client.get(Namespace, "default")).metadata.name == "default"
        assert link.connections >= 3
