"""A TCP forwarder in front of an API server that a test can cut and restore: the same outage
on the emulator and on a real kube-apiserver (which has no fault injection), for the one
client sent through it. Bytes are forwarded as they are, so TLS runs end to end.

``cut()`` closes every forwarded connection and refuses new ones (closed on accept) until
``restore()``: what a client sees when the server, or the way to it, is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import trio


async def _pipe(source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
    """One direction until its end, which ends the connection (no half-closed connections)."""
    while chunk := await source.receive_some(65536):
        await sink.send_all(chunk)
    done.cancel()


@dataclass
class Forwarder:
    """Forwards 127.0.0.1:``port`` to ``upstream`` (a URL); ``url`` is the same URL through it."""

    upstream: str
    port: int = 0
    down: bool = False
    _scopes: set[trio.CancelScope] = field(default_factory=set)

    @property
    def url(self) -> str:
        parts = urlsplit(self.upstream)
        return f"{parts.scheme}://127.0.0.1:{self.port}"

    def cut(self) -> None:
        self.down = True
        for scope in self._scopes:
            scope.cancel()

    def restore(self) -> None:
        self.down = False

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled; started once it listens."""
        [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listener.socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._forward, [listener])
            task_status.started()

    async def _forward(self, downstream: trio.SocketStream) -> None:
        async with downstream:
            if self.down:
                return
            parts = urlsplit(self.upstream)
            assert parts.hostname is not None and parts.port is not None
            with trio.CancelScope() as scope:
                self._scopes.add(scope)
                try:
                    async with (
                        await trio.open_tcp_stream(parts.hostname, parts.port) as upstream,
                        trio.open_nursery() as nursery,
                    ):
                        nursery.start_soon(_pipe, downstream, upstream, nursery.cancel_scope)
                        nursery.start_soon(_pipe, upstream, downstream, nursery.cancel_scope)
                except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass  # either side went: the connection ends
                finally:
                    self._scopes.discard(scope)
