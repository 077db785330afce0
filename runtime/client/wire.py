"""HTTP/1.1 to the API server straight from trio: no worker thread, no requests, no urllib3.

Why: a controller's requests are small and many. Through pykube-ng's ``requests`` session each
one crossed into a worker thread and back and went through requests' and urllib3's layers —
together most of a manager's CPU (``tests/bench/requests.py`` compares the paths; the figures
are in ``docs/performance.md``). Here a request is a few ``h11``
events written on a kept-alive trio stream (TLS by ``trio.SSLStream``) and read back in the same
task, so a cancelled call simply stops: no socket to shut down from another thread.

pykube-ng is still what reads the kubeconfig, and ``kubetrio.runtime.client.credentials`` still
decides each request's bearer token and client certificate (re-read token files, cached exec
plugins, rotating certificate files; a 401 renews them and the request is sent once more). The TLS
settings are urllib3's (``create_urllib3_context``) with the cluster's CA, ``tls-server-name`` and
``insecure-skip-tls-verify`` applied as pykube-ng applies them; one ``SSLContext`` is made per
client certificate, so a rotated certificate is used by new connections while requests under way
finish on the old ones. Users that only pykube-ng can authenticate (passwords, ``auth-provider``)
and servers reached through a proxy keep the thread path (``kubetrio.runtime.client.transport``);
``Wire.for_client`` returns None for them.

Example (``Client`` does this for every request; callers never need to)::

    wire = Wire.for_client(pykube.HTTPClient(config))
    status, reason, headers, body = await wire.exchange(
        "GET", "/api/v1/namespaces", {"Accept": "application/json"}, None, read_timeout=30
    )
"""

from __future__ import annotations

import contextlib
import os
import select
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import certifi
import h11
import pykube
import requests
import trio
from urllib3.util.ssl_ import create_urllib3_context

from kubetrio.runtime.client.clockhold import request_in_flight
from kubetrio.runtime.client.credentials import Credentials, Sent
from kubetrio.runtime.client.transport import TrackedAdapter

# What one read asks of the socket: large enough that a big LIST arrives in few reads.
READ_SIZE = 256 * 1024
# Idle kept-alive connections per client certificate; more are closed once answered.
DEFAULT_IDLE = 64
# Client certificates whose contexts (and idle connections) are kept: the current one and
# the ones requests under way may still be finishing with.
CONTEXTS_KEPT = 4

# Requests whose repetition changes nothing more (RFC 9110 9.2.2): sent again when a
# kept-alive connection turns out closed before any answer.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

Headers = dict[str, str]
Answer = tuple[int, str, Mapping[str, str], bytes]


class WireError(Exception):
    """No (complete) answer from the server; ``api_server`` is ``scheme://host:port`` and the
    cause is chained, so ``kubetrio.runtime.client.unreachable`` can name both."""

    def __init__(self, api_server: str, cause: BaseException) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.api_server = api_server
        self.__cause__ = cause


class _Connection:
    """One kept-alive stream and its HTTP/1.1 state."""

    __slots__ = ("h11", "key", "stream")

    def __init__(self, stream: trio.abc.Stream, key: tuple[str, str] | None) -> None:
        self.stream = stream
        self.key = key
        self.h11 = h11.Connection(h11.CLIENT)

    async def next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(bytes(await self.stream.receive_some(READ_SIZE)))

    def reusable(self) -> bool:
        """Ready for another request: the last exchange is complete, or none began."""
        ours, theirs = self.h11.our_state, self.h11.their_state
        if ours is h11.DONE and theirs is h11.DONE:
            self.h11.start_next_cycle()
            return True
        return ours is h11.IDLE and theirs is h11.IDLE


class Wire:
    """Requests to one API server over a small pool of kept-alive connections."""

    def __init__(
        self,
        url: str,
        credentials: Credentials,
        *,
        verify: str | bool | None = None,
        server_name: str | None = None,
        max_idle: int = DEFAULT_IDLE,
    ) -> None:
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.https else 80)
        self.api_server = f"{parts.scheme}://{self.host}:{self.port}"
        self.prefix = parts.path.rstrip("/")
        host_header = parts.netloc.rsplit("@", 1)[-1]
        self.host_header = host_header.encode("ascii")
        self.credentials = credentials
        self.verify = verify
        self.server_name = server_name or self.host
        self.max_idle = max_idle
        # Exec plugins may start a process (seconds): their lookups go to a thread.
        self._blocking_credentials = credentials.exec_plugin is not None
        self._contexts: dict[tuple[str, str] | None, ssl.SSLContext] = {}
        self._idle: dict[tuple[str, str] | None, list[_Connection]] = {}

    @classmethod
    def for_client(cls, api: pykube.HTTPClient, max_idle: int = DEFAULT_IDLE) -> Wire | None:
        """The trio path for pykube-ng's client ``api``, or None where only requests can go
        (pykube-ng authenticates the user, a proxy is configured, an unknown scheme)."""
        adapter = api.session.get_adapter(api.url)
        if not isinstance(adapter, TrackedAdapter) or adapter.credentials is None:
            return None
        if requests.utils.select_proxy(api.url, api.session.proxies):
            return None
        if urlsplit(api.url).scheme not in ("http", "https"):
            return None
        return cls(
            api.url,
            adapter.credentials,
            verify=adapter._verify,
            server_name=adapter.kube_config.cluster.get("tls-server-name"),
            max_idle=max_idle,
        )

    # -- TLS ------------------------------------------------------------------------------

    def _context(self, cert: tuple[str, str] | None) -> ssl.SSLContext:
        context = self._contexts.get(cert)
        if context is None:
            context = create_urllib3_context()
            if self.verify is False:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            else:
                bundle = self.verify if isinstance(self.verify, str) else certifi.where()
                if os.path.isdir(bundle):
                    context.load_verify_locations(capath=bundle)
                else:
                    context.load_verify_locations(cafile=bundle)
            if cert is not None:
                context.load_cert_chain(*cert)
            self._contexts[cert] = context
            while len(self._contexts) > CONTEXTS_KEPT:  # an old rotation: its pool goes too
                oldest = next(iter(self._contexts))
                del self._contexts[oldest]
                for stale in self._idle.pop(oldest, []):
                    _close_now(stale)
        return context

    # -- connections ----------------------------------------------------------------------

    async def _connect(self, cert: tuple[str, str] | None) -> _Connection:
        try:
            stream: trio.abc.Stream = await trio.open_tcp_stream(self.host, self.port)
        except BaseExceptionGroup as group:
            # Ctrl-C landing in trio's connection attempts (a nursery) arrives wrapped; a
            # caller expects a KeyboardInterrupt as it would arrive anywhere else.
            if group.subgroup(KeyboardInterrupt) is not None:
                raise KeyboardInterrupt from None
            raise
        if self.https:
            try:
                context = self._context(cert)
                tls = trio.SSLStream(stream, context, server_hostname=self.server_name)
                await tls.do_handshake()
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
            stream = tls
        return _Connection(stream, cert)

    def _take_idle(self, cert: tuple[str, str] | None) -> _Connection | None:
        """The most recently used idle connection the server has not hung up on."""
        idle = self._idle.get(cert)
        while idle:
            connection = idle.pop()
            if not _dropped(connection):
                return connection
            _close_now(connection)
        return None

    def _give_back(self, connection: _Connection) -> None:
        idle = self._idle.setdefault(connection.key, [])
        current = connection.key in self._contexts or not self.https
        if current and len(idle) < self.max_idle and connection.reusable():
            idle.append(connection)
            return
        _close_now(connection)

    async def _acquire(
        self, cert: tuple[str, str] | None, connect_timeout: float
    ) -> tuple[_Connection, bool]:
        """An idle connection for ``cert``, or a new one; and whether it was reused."""
        connection = self._take_idle(cert)
        if connection is not None:
            return connection, True
        try:
            with trio.fail_after(connect_timeout):
                return await self._connect(cert), False
        except trio.TooSlowError:
            raise WireError(self.api_server, TimeoutError("timed out")) from None
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as error:
            raise WireError(self.api_server, error) from None

    @contextlib.asynccontextmanager
    async def _connection(
        self, cert: tuple[str, str] | None, connect_timeout: float
    ) -> AsyncIterator[tuple[_Connection, bool]]:
        """A connection for one exchange (and whether it was reused); kept for the next one
        only if the exchange ended cleanly, closed on any error or cancellation."""
        connection, reused = await self._acquire(cert, connect_timeout)
        try:
            yield connection, reused
        except BaseException:
            _close_now(connection)
            raise
        self._give_back(connection)

    # -- one request ----------------------------------------------------------------------

    async def _credentials(self, headers: Headers) -> tuple[Sent, tuple[str, str] | None]:
        options: dict[str, Any] = {}
        if self._blocking_credentials:
            # A plugin's run is part of the request: a test's mock clock must not jump (and
            # time out the caller) while it runs in its thread.
            with request_in_flight():
                sent = await trio.to_thread.run_sync(self.credentials.apply, headers, options)
        else:
            sent = self.credentials.apply(headers, options)
        cert = options.get("cert")
        return sent, (cert[0], cert[1]) if cert is not None else None

    async def _renewed(self, sent: Sent) -> bool:
        if self._blocking_credentials:
            with request_in_flight():
                return await trio.to_thread.run_sync(
                    self.credentials.refresh_after_unauthorized, sent
                )
        return self.credentials.refresh_after_unauthorized(sent)

    async def exchange(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
        *,
        read_timeout: float,
        before_send: Callable[[Headers], None] | None = None,
    ) -> Answer:
        """Send ``method target`` (path and query) and read the whole answer.

        ``before_send`` runs right before the request's bytes are written (a fence check);
        whatever it raises stops the request unsent. Raises ``WireError`` when no complete
        answer came (refused, TLS, timed out after ``read_timeout`` seconds, connection lost) and
        ``CredentialError`` when no credentials could be had.
        """
        sent, cert = await self._credentials(headers)
        answer = await self._send(method, target, headers, body, cert, read_timeout, before_send)
        if answer[0] == 401 and await self._renewed(sent):
            # Refused before the server acted on it: safe to send again, once.
            _, cert = await self._credentials(headers)
            answer = await self._send(
                method, target, headers, body, cert, read_timeout, before_send
            )
        return answer

    async def _send(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
        cert: tuple[str, str] | None,
        read_timeout: float,
        before_send: Callable[[Headers], None] | None,
    ) -> Answer:
        for attempt in range(2):
            connection, reused = await self._acquire(cert, min(10.0, read_timeout))
            # Plain try/finally and a bare cancel scope: this runs for every request, and
            # generator-based context managers cost more than the rest of the bookkeeping.
            try:
                if before_send is not None:
                    before_send(headers)
                with trio.CancelScope(deadline=trio.current_time() + read_timeout):
                    return await self._round_trip(connection, method, target, headers, body)
                raise WireError(self.api_server, TimeoutError("timed out"))
            except _Stale:
                if reused and attempt == 0 and method in IDEMPOTENT:
                    # A kept-alive connection ended with no answer begun: the server had
                    # closed it (an idle timeout racing this request). Like Go's net/http,
                    # only a request that may be repeated goes again.
                    continue
                raise WireError(
                    self.api_server, ConnectionResetError("connection closed")
                ) from None
            except (OSError, trio.BrokenResourceError, h11.ProtocolError) as error:
                raise WireError(self.api_server, error) from None
            finally:
                # Kept only if the exchange is complete (or never began: a fence refused
                # it); anything else (timed out, cancelled, cut) leaves it unusable.
                self._give_back(connection)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _round_trip(
        self,
        connection: _Connection,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
    ) -> Answer:
        wire = connection.h11
        fields = [(b"Host", self.host_header)]
        fields.extend(
            (name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
        )
        fields.append((b"Content-Length", str(len(body) if body is not None else 0).encode()))
        out = wire.send(h11.Request(method=method, target=self.prefix + target, headers=fields))
        assert out is not None
        if body:
            out += wire.send(h11.Data(data=body)) or b""
        out += wire.send(h11.EndOfMessage()) or b""
        try:
            await connection.stream.send_all(out)
            response = await connection.next_event()
        except (trio.BrokenResourceError, ConnectionResetError, h11.RemoteProtocolError) as error:
            raise _Stale() from error  # closed before any of the answer came
        if response is h11.PAUSED or isinstance(response, h11.ConnectionClosed):
            raise _Stale()
        if not isinstance(response, h11.Response):
            raise h11.RemoteProtocolError(f"unexpected {type(response).__name__}")
        chunks: list[bytes] = []
        while True:
            event = await connection.next_event()
            if isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                raise h11.RemoteProtocolError(f"connection closed mid-answer ({event})")
        answer_headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers
        }
        return (
            response.status_code,
            response.reason.decode("latin-1"),
            answer_headers,
            b"".join(chunks),
        )

    # -- streams --------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(
        self, target: str, headers: Headers, *, connect_timeout: float
    ) -> AsyncIterator[tuple[int, str, AsyncIterator[bytes]]]:
        """A GET whose answer is read as it arrives (a watch): status, reason and the body's
        chunks. The connection is kept only if the body was read to its end. A 401 renews
        the credentials and, if they changed, the request is made once more, as ``exchange``
        does."""
        # Until the answer's head is in, this is an exchange like any other: it holds a
        # test's mock clock (the stream after it does not: it stays open for good).
        with request_in_flight():
            sent, cert = await self._credentials(headers)
            connection, response = await self._open_stream(target, headers, cert, connect_timeout)
            if response.status_code == 401 and await self._renewed(sent):
                _close_now(connection)
                _, cert = await self._credentials(headers)
                connection, response = await self._open_stream(
                    target, headers, cert, connect_timeout
                )

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                event = await connection.next_event()
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    return
                else:
                    raise h11.RemoteProtocolError(f"stream ended mid-answer ({event})")

        try:
            yield response.status_code, response.reason.decode("latin-1"), chunks()
        except BaseException:
            _close_now(connection)
            raise
        self._give_back(connection)

    async def _open_stream(
        self, target: str, headers: Headers, cert: tuple[str, str] | None, connect_timeout: float
    ) -> tuple[_Connection, h11.Response]:
        """A connection whose GET was sent and whose answer's head arrived; the caller gives
        it back or closes it."""
        fields = [(b"Host", self.host_header)]
        fields.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())
        request = h11.Request(method="GET", target=self.prefix + target, headers=fields)
        for attempt in range(2):
            connection, reused = await self._acquire(cert, connect_timeout)
            try:
                wire = connection.h11
                out = wire.send(request) or b""
                await connection.stream.send_all(out + (wire.send(h11.EndOfMessage()) or b""))
                response = await connection.next_event()
            except (OSError, trio.BrokenResourceError, h11.ProtocolError) as error:
                _close_now(connection)
                if reused and attempt == 0:
                    continue  # a kept-alive connection the server had closed
                raise WireError(self.api_server, error) from None
            except BaseException:
                _close_now(connection)
                raise
            if isinstance(response, h11.Response):
                return connection, response
            _close_now(connection)
            if not (reused and attempt == 0):
                raise WireError(self.api_server, ConnectionResetError("connection closed"))
        raise AssertionError("unreachable")  # pragma: no cover


class _Stale(Exception):
    """A kept-alive connection turned out closed before any of the answer arrived."""


def _dropped(connection: _Connection) -> bool:
    """True when an idle connection's socket is readable: the server closed it (or sent
    something unasked), so it must not carry a request (urllib3's ``is_connection_dropped``)."""
    stream = connection.stream
    transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
    if not isinstance(transport, trio.SocketStream):
        return False
    # poll, not select: select() refuses descriptors above FD_SETSIZE (1024), which a busy
    # manager's sockets reach, and every idle connection would then count as dropped.
    poller = select.poll()
    try:
        poller.register(transport.socket.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def _close_now(connection: _Connection) -> None:
    """Close without a TLS goodbye: never blocks, safe in a cancelled scope."""
    stream = connection.stream
    transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
    if isinstance(transport, trio.SocketStream):
        transport.socket.close()
