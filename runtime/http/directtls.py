"""TLS read and written by OpenSSL on the socket itself: a trio stream over a non-blocking
``ssl.SSLSocket``.

Why not ``trio.SSLStream``: it runs TLS over memory buffers, so every read is Python pumping
bytes (a read that fails for want of data, the transport's ``recv``, a copy into the buffer,
the read again) under a lock that guards against concurrent use. That was the largest part of
a watched event's cost (about 17 µs of its 74, see ``docs/performance.md``). Here one
``SSL_read`` reads the socket and decrypts in C; the stream waits on the socket only when
OpenSSL says it must. Used for a direct TLS connection; TLS inside a proxy's TLS still needs
memory buffers (``trio.SSLStream``).

Cancellation is trio's: a call is a checkpoint, and a cancelled wait leaves nothing behind but
a stream that must not be used again (as with ``trio.SSLStream``).
"""

from __future__ import annotations

import socket
import ssl

import trio

__all__ = ["DirectTLSStream"]

# Bytes a receive asks for when the caller gives no size.
_DEFAULT_RECEIVE = 64 * 1024


class DirectTLSStream(trio.abc.Stream):
    """A TLS client connection over ``sock`` (non-blocking, handshake done: ``connect``)."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.socket = sock

    @classmethod
    async def connect(
        cls, stream: trio.SocketStream, context: ssl.SSLContext, server_hostname: str
    ) -> DirectTLSStream:
        """Take over ``stream``'s socket and shake hands as a client of ``server_hostname``;
        ``stream`` is unusable afterwards. Failures as ``trio.SSLStream`` raises them:
        ``ssl.SSLError`` (a certificate refused), ``trio.BrokenResourceError``."""
        plain = socket.socket(fileno=stream.socket.detach())
        plain.setblocking(False)
        try:
            tls = context.wrap_socket(
                plain, server_hostname=server_hostname, do_handshake_on_connect=False
            )
        except BaseException:
            plain.close()
            raise
        self = cls(tls)
        try:
            await self._retry(tls.do_handshake)
        except BaseException:
            self.close_now()
            raise
        return self

    async def _retry(self, operation: object, *args: object) -> object:
        """Run ``operation`` until OpenSSL needs nothing more of the socket; a checkpoint."""
        sock = self.socket
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while True:
            try:
                result = operation(*args)  # type: ignore[operator]
            except ssl.SSLWantReadError:
                await trio.lowlevel.wait_readable(sock)
            except ssl.SSLWantWriteError:
                await trio.lowlevel.wait_writable(sock)
            except (ssl.SSLSyscallError, ssl.SSLEOFError, ConnectionError) as error:
                raise trio.BrokenResourceError(str(error)) from error
            else:
                if not waited:
                    await trio.lowlevel.cancel_shielded_checkpoint()
                return result
            waited = True

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await self._retry(self.socket.recv, max_bytes or _DEFAULT_RECEIVE)
        assert isinstance(data, bytes)
        return data  # b"" once the server closed the connection

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        if not view:
            await trio.lowlevel.checkpoint()
            return
        sent = 0
        while sent < len(view):
            count = await self._retry(self.socket.send, view[sent:])
            assert isinstance(count, int)
            sent += count

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self.socket)

    async def aclose(self) -> None:
        """Close without a TLS goodbye (no ``close_notify``): never blocks."""
        self.close_now()
        await trio.lowlevel.checkpoint()

    def close_now(self) -> None:
        """``aclose`` without the checkpoint: safe in a cancelled scope. A task waiting on the
        socket is woken, as a trio socket's ``close`` does."""
        if self.socket.fileno() != -1:
            trio.lowlevel.notify_closing(self.socket)
        self.socket.close()
