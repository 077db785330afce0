"""A TCP link between a client and a server that a test can cut: a network partition on demand.

A watch on a real API server cannot be made to fail from outside except by breaking its
connection; a client pointed at ``link.url(...)`` goes through the link, so ``cut()`` drops every
connection in flight and refuses new ones (each is closed once accepted, as a dead load balancer
does) until ``restore()``. Meanwhile the test may change the server behind the client's back.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

__all__ = ["Link", "tcp_link"]

CHUNK = 65536


@dataclass
class Link:
    """Relays ``127.0.0.1:port`` to the target until cut; ``connections`` counts the accepted
    ones (a client reconnecting shows here)."""

    port: int = 0
    connections: int = 0
    is_cut: bool = False
    _open: set[trio.CancelScope] = field(default_factory=set)

    def url(self, scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Drop every relayed connection and refuse new ones until ``restore``."""
        self.is_cut = True
        for scope in self._open:
            scope.cancel()

    def restore(self) -> None:
        self.is_cut = False


async def _pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
    # Either side going away ends the relay with it.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await source.receive_some(CHUNK):
            await sink.send_all(data)
        await sink.send_eof()


@asynccontextmanager
async def tcp_link(target_port: int, target_host: str = "127.0.0.1") -> AsyncIterator[Link]:
    """A link to ``target_host:target_port`` listening on a free loopback port, for the block."""
    link = Link()

    async def relay(client: trio.SocketStream) -> None:
        link.connections += 1
        async with client:
            if link.is_cut:
                return
            with trio.CancelScope() as scope:
                link._open.add(scope)
                try:
                    async with (
                        await trio.open_tcp_stream(target_host, target_port) as server,
                        trio.open_nursery() as nursery,
                    ):
                        nursery.start_soon(_pump, client, server)
                        nursery.start_soon(_pump, server, client)
                except OSError:
                    pass  # the target refused: so does the link
                finally:
                    link._open.discard(scope)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, host="127.0.0.1"), relay, 0
        )
        link.port = listeners[0].socket.getsockname()[1]
        try:
            yield link
        finally:
            nursery.cancel_scope.cancel()
