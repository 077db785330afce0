"""One HTTP/1.1 connection: a trio stream, its h11 state, and what a kept-alive one needs."""

from __future__ import annotations

import select
from collections.abc import Hashable
from typing import Any

import h11
import trio

__all__ = ["READ_SIZE", "Connection"]

# What one read asks of the socket: large enough that a big answer arrives in few reads.
READ_SIZE = 256 * 1024


class Connection:
    """A stream and its HTTP/1.1 state; ``key`` is the pool's (the TLS identity it was opened
    with); ``heard`` whether any byte of the current answer arrived."""

    __slots__ = ("h11", "heard", "key", "stream")

    def __init__(self, stream: trio.abc.Stream, key: Hashable) -> None:
        self.stream = stream
        self.key = key
        self.h11 = h11.Connection(h11.CLIENT)
        self.heard = False

    async def next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = bytes(await self.stream.receive_some(READ_SIZE))
            if data:
                self.heard = True
            self.h11.receive_data(data)

    def reusable(self) -> bool:
        """Ready for another request: the last exchange is complete, or none began."""
        ours, theirs = self.h11.our_state, self.h11.their_state
        if ours is h11.DONE and theirs is h11.DONE:
            self.h11.start_next_cycle()
            self.heard = False
            return True
        return ours is h11.IDLE and theirs is h11.IDLE

    def dropped(self) -> bool:
        """True when an idle connection's socket is readable: the server closed it (or sent
        something unasked), so it must not carry a request (urllib3's
        ``is_connection_dropped``)."""
        socket = self._socket()
        if socket is None:
            return False
        # poll, not select: select() refuses descriptors above FD_SETSIZE (1024), which a busy
        # manager's sockets reach, and every idle connection would then count as dropped.
        poller = select.poll()
        try:
            poller.register(socket.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def close_now(self) -> None:
        """Close without a TLS goodbye: never blocks, safe in a cancelled scope."""
        socket = self._socket()
        if socket is not None:
            socket.close()

    def _socket(self) -> trio.socket.SocketType | None:
        stream = self.stream
        while isinstance(stream, trio.SSLStream):  # TLS inside a proxy's TLS, too
            stream = stream.transport_stream
        return stream.socket if isinstance(stream, trio.SocketStream) else None
