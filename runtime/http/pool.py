"""Requests to one origin over a small pool of kept-alive HTTP/1.1 connections.

A request is written on a trio stream and its answer read back in the same task
(``connection``), so a cancelled call simply stops. Connections are kept per key (the TLS
identity they were opened with: one pool serves a client certificate and its rotated successor
side by side) and reused most-recent first, closed after ``IDLE_TIMEOUT`` unused; an idle one
the server has hung up on is never picked, and a request that finds its kept-alive connection
closed before any answer is sent again on a fresh one when repeating it is safe (RFC 9110's
idempotent methods, as Go's ``net/http``).

With a proxy, an ``https://`` origin is reached through a CONNECT tunnel opened before the TLS
handshake; a plain ``http://`` one gets its requests in absolute form (``GET http://host/path``),
as Go sends them. An ``https://`` proxy is itself spoken to over TLS with the origin's context
(Go's transport does the same).

Example (one GET, the answer read whole)::

    pool = ConnectionPool("https://example.com", tls=ssl.create_default_context())
    status, reason, headers, body = await pool.exchange("GET", "/", {"Accept": "*/*"}, None)
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import AsyncIterator, Callable, Hashable, Mapping, MutableMapping
from urllib.parse import urlsplit

import trio

from kubetrio.runtime.http.connection import Connection, Head
from kubetrio.runtime.http.directtls import DirectTLSStream
from kubetrio.runtime.http.errors import ClosedEarly, NoResponse, ProtocolError
from kubetrio.runtime.http.proxy import Proxy, authority, open_tunnel

__all__ = ["DEFAULT_IDLE", "IDEMPOTENT", "IDLE_TIMEOUT", "Answer", "ConnectionPool", "Streamed"]

# Idle kept-alive connections per key; more are closed once answered.
DEFAULT_IDLE = 64
# Seconds a kept-alive connection may stay idle before it is closed (client-go's transport
# default): a burst of concurrent requests does not leave its connections, and their TLS
# state, open for the life of the process.
IDLE_TIMEOUT = 90.0

# Requests whose repetition changes nothing more (RFC 9110 9.2.2): sent again when a
# kept-alive connection turns out closed before any answer.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

Headers = MutableMapping[str, str]
Answer = tuple[int, str, Mapping[str, str], bytes]
TLS = ssl.SSLContext | Callable[[Hashable], ssl.SSLContext]
# What fails a connection or an exchange, as opposed to a bug or a cancellation.
_IO_ERRORS = (
    OSError,
    EOFError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    ProtocolError,
)


class _Stale(Exception):
    """A kept-alive connection turned out closed before any of the answer arrived."""


class Streamed:
    """An answer whose head is in: iterate ``chunks()`` for its body as it arrives."""

    __slots__ = ("_connection", "_origin", "headers", "reason", "status")

    def __init__(self, origin: str, connection: Connection, head: Head) -> None:
        self._origin = origin
        self._connection = connection
        self.status: int = head.status
        self.reason = head.reason
        self.headers = head.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces, one per read (a watch's events as they come); ``NoResponse``
        when the stream breaks before its end."""
        read_body = self._connection.read_body
        while True:
            try:
                piece = await read_body()
            except _IO_ERRORS as error:
                raise NoResponse(self._origin, error) from error
            if piece is None:
                return
            yield piece
            # Nothing of this read stays referenced while the next is awaited: an idle
            # watch would otherwise hold its last payload.
            piece = None

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])


class ConnectionPool:
    """Requests to the origin of ``url`` (its path prefixes every target).

    ``tls``: the context for ``https://`` (or a function of the connection's key giving one;
    the system's default context when None). ``server_name``: the name the server's certificate
    must carry (its host by default). ``max_idle``: kept-alive connections per key (0: one
    connection per request).
    """

    def __init__(
        self,
        url: str,
        *,
        tls: TLS | None = None,
        server_name: str | None = None,
        proxy: Proxy | None = None,
        max_idle: int = DEFAULT_IDLE,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s) URL, got {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.origin = f"{parts.scheme}://{authority(self.host, self.port)}"
        self.prefix = parts.path.rstrip("/")
        host_header = parts.netloc.rsplit("@", 1)[-1]
        self.server_name = server_name or self.host
        self.proxy = proxy
        self.max_idle = max_idle
        self.opened = 0  # connections made: a figure of reuse
        self._fields: list[tuple[str, str]] = [("Host", host_header)]
        self._target_prefix = self.prefix
        if proxy is not None and not self.https:  # a forward proxy: absolute-form requests
            self._target_prefix = f"http://{host_header}{self.prefix}"
            if proxy.authorization is not None:
                self._fields.append(("Proxy-Authorization", proxy.authorization))
        self._tls = tls
        self._idle: dict[Hashable, list[Connection]] = {}

    # -- connections ----------------------------------------------------------------------

    def _context(self, key: Hashable) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls if isinstance(self._tls, ssl.SSLContext) else self._tls(key)

    async def _handshake(
        self, stream: trio.abc.Stream, key: Hashable, server_name: str
    ) -> trio.abc.Stream:
        """TLS over ``stream``: by OpenSSL on the socket when ``stream`` is one, else (TLS
        inside a proxy's TLS) over memory buffers."""
        if isinstance(stream, trio.SocketStream):
            return await DirectTLSStream.connect(stream, self._context(key), server_name)
        tls = trio.SSLStream(stream, self._context(key), server_hostname=server_name)
        await tls.do_handshake()
        return tls

    async def _connect(self, key: Hashable) -> Connection:
        proxy = self.proxy
        host, port = (proxy.host, proxy.port) if proxy is not None else (self.host, self.port)
        try:
            stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
        except BaseExceptionGroup as group:
            # Ctrl-C landing in trio's connection attempts (a nursery) arrives wrapped; a
            # caller expects a KeyboardInterrupt as it would arrive anywhere else.
            if group.subgroup(KeyboardInterrupt) is not None:
                raise KeyboardInterrupt from None
            raise
        try:
            if proxy is not None and proxy.https:
                stream = await self._handshake(stream, key, proxy.host)
            if proxy is not None and self.https:
                await open_tunnel(stream, proxy, authority(self.host, self.port))
            if self.https:
                stream = await self._handshake(stream, key, self.server_name)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        self.opened += 1
        self._idle.setdefault(key, [])
        return Connection(stream, key)

    def _take_idle(self, key: Hashable) -> Connection | None:
        """The most recently used idle connection the server has not hung up on."""
        idle = self._idle.get(key)
        if idle:
            _close_expired(idle)
        while idle:
            connection = idle.pop()
            if not connection.dropped():
                return connection
            connection.close_now()
        return None

    def _give_back(self, connection: Connection) -> None:
        """Kept for the next request if its exchange is complete (or never began) and its
        key was not forgotten meanwhile; closed otherwise."""
        idle = self._idle.get(connection.key)
        if idle is not None and len(idle) < self.max_idle and connection.reusable():
            connection.idle_since = trio.current_time()
            idle.append(connection)
            _close_expired(idle)
            return
        connection.close_now()

    async def _acquire(self, key: Hashable, connect_timeout: float) -> tuple[Connection, bool]:
        """An idle connection for ``key``, or a new one; and whether it was reused."""
        connection = self._take_idle(key)
        if connection is not None:
            return connection, True
        try:
            with trio.fail_after(connect_timeout):
                return await self._connect(key), False
        except trio.TooSlowError:
            timeout = TimeoutError("timed out")
            raise NoResponse(self.origin, timeout, connecting=True) from timeout
        except (*_IO_ERRORS, ssl.SSLError) as error:
            raise NoResponse(self.origin, error, connecting=True) from error

    def forget(self, key: Hashable) -> None:
        """Close ``key``'s idle connections; those in use are closed when they come back."""
        for connection in self._idle.pop(key, []):
            connection.close_now()

    def close(self) -> None:
        """Close every idle connection."""
        for key in list(self._idle):
            self.forget(key)

    # -- requests -------------------------------------------------------------------------

    async def exchange(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
        *,
        key: Hashable = None,
        read_timeout: float = math.inf,
        connect_timeout: float = math.inf,
        before_send: Callable[[Headers], None] | None = None,
        repeat_if_stale: bool | None = None,
    ) -> Answer:
        """Send ``method target`` (path and query) and read the whole answer.

        ``before_send`` runs right before the request's bytes are written (a fence check);
        whatever it raises stops the request unsent. ``repeat_if_stale`` (by default: the method
        is idempotent) sends it again when a kept-alive connection was closed before any
        answer. Raises ``NoResponse`` when no complete answer came (refused, TLS, the proxy,
        timed out after ``read_timeout`` seconds, connection lost).
        """
        repeat = method in IDEMPOTENT if repeat_if_stale is None else repeat_if_stale
        for attempt in range(2):
            connection, reused = await self._acquire(key, connect_timeout)
            # Plain try/finally and a bare cancel scope: this runs for every request, and
            # generator-based context managers cost more than the rest of the bookkeeping.
            try:
                if before_send is not None:
                    before_send(headers)
                with trio.CancelScope(deadline=trio.current_time() + read_timeout):
                    return await self._round_trip(connection, method, target, headers, body)
                timeout = TimeoutError("timed out")
                raise NoResponse(self.origin, timeout) from timeout
            except _Stale:
                if reused and attempt == 0 and repeat:
                    # A kept-alive connection ended with no answer begun: the server had
                    # closed it (an idle timeout racing this request).
                    continue
                closed = ClosedEarly()
                raise NoResponse(self.origin, closed) from closed
            except _IO_ERRORS as error:
                raise NoResponse(self.origin, error) from error
            finally:
                # Kept only if the exchange is complete (or never began: a fence refused
                # it); anything else (timed out, cancelled, cut) leaves it unusable.
                self._give_back(connection)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _start(
        self,
        connection: Connection,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
    ) -> Head:
        """Write the request and read the answer's head; ``_Stale`` when the connection turns
        out closed before any byte of it."""
        fields = self._fields.copy()
        fields.extend(headers.items())
        out = connection.request(method, self._target_prefix + target, fields, body)
        try:
            await connection.stream.send_all(out)
            return await connection.read_head()
        except (trio.BrokenResourceError, ConnectionResetError, EOFError) as error:
            if connection.heard:
                raise
            raise _Stale() from error  # closed before any of the answer came

    async def _round_trip(
        self,
        connection: Connection,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
    ) -> Answer:
        head = await self._start(connection, method, target, headers, body)
        read_body = connection.read_body
        first = await read_body()
        if first is None:
            return head.status, head.reason, head.headers, b""
        more = await read_body()
        if more is None:
            return head.status, head.reason, head.headers, first
        # One growing buffer, not a list of pieces: a large answer (a watch cache's unpaged
        # LIST is 90 MB at 10 000 pods) then lives in one mapping the allocator hands back
        # whole when it is freed, where thousands of small pieces would leave their heap
        # behind below the objects decoded from them.
        whole = bytearray(first)
        while more is not None:
            whole += more
            more = await read_body()
        return head.status, head.reason, head.headers, bytes(whole)

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None = None,
        *,
        key: Hashable = None,
        connect_timeout: float = math.inf,
        repeat_if_stale: bool | None = None,
    ) -> AsyncIterator[Streamed]:
        """A request whose answer is read as it arrives (a watch). The connection is kept only
        if the body was read to its end. ``NoResponse`` as ``exchange`` raises it, also from
        the body's chunks."""
        repeat = method in IDEMPOTENT if repeat_if_stale is None else repeat_if_stale
        for attempt in range(2):
            connection, reused = await self._acquire(key, connect_timeout)
            try:
                head = await self._start(connection, method, target, headers, body)
                break
            except _Stale:
                connection.close_now()
                if reused and attempt == 0 and repeat:
                    continue
                closed = ClosedEarly()
                raise NoResponse(self.origin, closed) from closed
            except _IO_ERRORS as error:
                connection.close_now()
                raise NoResponse(self.origin, error) from error
            except BaseException:
                connection.close_now()
                raise
        else:  # pragma: no cover
            raise AssertionError("unreachable")
        try:
            yield Streamed(self.origin, connection, head)
        except BaseException:
            connection.close_now()
            raise
        self._give_back(connection)


def _close_expired(idle: list[Connection]) -> None:
    """Close the connections of ``idle`` (least recently used first) idle for longer than
    ``IDLE_TIMEOUT``."""
    expired = trio.current_time() - IDLE_TIMEOUT
    while idle and idle[0].idle_since < expired:
        idle.pop(0).close_now()
