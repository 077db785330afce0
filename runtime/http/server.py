"""One HTTP/1.1 server: h11 over any trio stream (plain, TLS, or sniffed as the emulator does).

Each connection is a keep-alive loop: read a whole request (413 past ``max_body``, 431 past
``max_head`` of request line and headers), hand it to the handler, send the answer, and go on
until the client closes, asks to close, or stays quiet for ``idle_timeout`` (the read of a
request included). A handler that raises is answered 500 and logged; a malformed request is
answered with h11's status and the connection closed; a client that vanishes ends its
connection quietly; nothing one connection does ends the listener. A ``StreamResponse`` is
sent chunked and stops the moment its client goes away (a watch client sends nothing after
its request, so any read completing means it is gone).

With ``tls`` the stream is wrapped in TLS first (the context is asked for at each connection,
so a reloaded certificate serves the next one; the handshake is bounded by the idle timeout).
How the server words its own errors is its user's: ``ErrorPages`` (plain text by default;
the emulator answers Status objects, as kube-apiserver does).

Not prometheus-client's threaded server nor an ASGI server: this one lives in its caller's
nursery and stops the moment its cancel scope is cancelled.
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import Callable
from typing import Final, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

import h11
import trio

from kubetrio.runtime.http.messages import (
    Cut,
    Handler,
    Request,
    Response,
    StreamResponse,
    StreamWriter,
)
from kubetrio.runtime.util.log import get_logger

__all__ = ["PLAIN_TEXT_ERRORS", "TEXT", "ErrorPages", "HttpServer", "text_response"]

log = get_logger("kubetrio.httpserver")

TEXT: Final = "text/plain; charset=utf-8"
_RECEIVE: Final = 65536
# Bodies below this are sent in one write; above it, large parts go out as they are (no copy).
_COALESCE: Final = 64 * 1024
_GONE: Final = (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError)


class ErrorPages(Protocol):
    """The answers the server gives on its own: to a request whose handler raised, and to a
    request it could not parse (``status`` from h11: 400, 413, 431...)."""

    def handler_failed(self) -> Response: ...

    def malformed(self, status: int, problem: str) -> Response: ...


class _PlainText:
    def handler_failed(self) -> Response:
        return text_response(500, "internal server error\n")

    def malformed(self, status: int, problem: str) -> Response:
        return text_response(status, f"bad request: {problem}\n")


PLAIN_TEXT_ERRORS: Final[ErrorPages] = _PlainText()


def text_response(status: int, text: str) -> Response:
    """A plain-text answer browsers will not sniff into anything else (Go's ``http.Error``)."""
    return Response(status, text.encode(), TEXT, [("X-Content-Type-Options", "nosniff")])


class HttpServer:
    """Serves ``handler`` on every connection given to ``serve_connection``."""

    def __init__(
        self,
        handler: Handler,
        *,
        max_body: int,
        max_head: int = 16 * 1024,
        idle_timeout: float = math.inf,
        tls: Callable[[], ssl.SSLContext] | None = None,
        errors: ErrorPages = PLAIN_TEXT_ERRORS,
    ) -> None:
        self.handler = handler
        self.max_body = max_body
        self.max_head = max_head
        self.idle_timeout = idle_timeout
        self.tls = tls
        self.errors = errors

    async def serve_connection(self, stream: trio.abc.Stream) -> None:
        """One keep-alive connection, until it ends; closes ``stream``."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_head)
        try:
            if self.tls is not None:
                secure = trio.SSLStream(stream, self.tls(), server_side=True)
                # Plain HTTP or a client that distrusts us fails here (BrokenResourceError).
                with trio.move_on_after(self.idle_timeout) as handshake:
                    await secure.do_handshake()
                if handshake.cancelled_caught:
                    return
                stream = secure
            while True:
                request = await self._next_request(conn, stream)
                if request is None:
                    return
                try:
                    response = await self.handler(request)
                except Exception:
                    # A bug in one response must not take the listener down.
                    log.exception("http handler failed", method=request.method, path=request.path)
                    response = self.errors.handler_failed()
                keep = await self._respond(conn, stream, request.method, response)
                if not keep or conn.our_state is h11.MUST_CLOSE:
                    return
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    return
        except h11.RemoteProtocolError as exc:
            await self._refuse(conn, stream, exc)
        except Exception as exc:
            # Never let one connection take the listener down; a vanished client is routine.
            if not _is_disconnect(exc):
                log.exception("http connection failed")
        finally:
            await trio.aclose_forcefully(stream)

    async def _next_request(self, conn: h11.Connection, stream: trio.abc.Stream) -> Request | None:
        """The next request, or None when the client closed or stayed quiet too long."""
        if self.idle_timeout == math.inf:  # a cancel scope costs µs a request: none unless needed
            return await self._read_request(conn, stream)
        request: Request | None = None
        with trio.move_on_after(self.idle_timeout):  # a keep-alive client gone quiet
            request = await self._read_request(conn, stream)
        return request

    async def _read_request(self, conn: h11.Connection, stream: trio.abc.Stream) -> Request | None:
        """The next request with its body; None when the client closed the connection."""
        head: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await stream.receive_some(_RECEIVE)))
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > self.max_body:
                    raise h11.RemoteProtocolError("request body too large", 413)
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                parts = urlsplit(head.target.decode("latin-1"))
                headers: dict[str, str] = {}
                for raw_name, raw_value in head.headers:
                    name = raw_name.decode("latin-1").lower()
                    value = raw_value.decode("latin-1")
                    headers[name] = f"{headers[name]}, {value}" if name in headers else value
                return Request(
                    method=head.method.decode("ascii"),
                    path=unquote(parts.path),
                    query=dict(parse_qsl(parts.query, keep_blank_values=True)),
                    headers=headers,
                    body=b"".join(chunks),
                    raw_query=parts.query,
                )

    async def _respond(
        self,
        conn: h11.Connection,
        stream: trio.abc.Stream,
        method: str,
        response: Response | StreamResponse,
    ) -> bool:
        """Sends ``response``; False when the connection must end (a stream cut short)."""
        if isinstance(response, StreamResponse):
            return await self._stream(conn, stream, response)
        body = response.body
        parts = body if isinstance(body, list) else [body]
        length = sum(map(len, parts))
        headers = [
            ("Content-Type", response.content_type),
            ("Content-Length", str(length)),
            *response.headers,
        ]
        out = [conn.send(h11.Response(status_code=response.status, headers=headers))]
        if method != "HEAD":  # a HEAD answer has the length of the body it does not send
            for part in parts:
                if part:
                    out.extend(conn.send_with_data_passthrough(h11.Data(data=part)) or ())
        out.append(conn.send(h11.EndOfMessage()))
        if length < _COALESCE:
            await stream.send_all(b"".join(out))
            return True
        pending: list[bytes] = []
        for piece in out:
            if len(piece) < _COALESCE:
                pending.append(piece)
                continue
            if pending:
                await stream.send_all(b"".join(pending))
                pending = []
            await stream.send_all(piece)
        if pending:
            await stream.send_all(b"".join(pending))
        return True

    async def _stream(
        self, conn: h11.Connection, stream: trio.abc.Stream, response: StreamResponse
    ) -> bool:
        headers = [
            ("Content-Type", response.content_type),
            ("Transfer-Encoding", "chunked"),
            ("Cache-Control", "no-cache, private"),
            *response.headers,
        ]
        await stream.send_all(conn.send(h11.Response(status_code=response.status, headers=headers)))
        writer = StreamWriter(conn, stream)
        finished = False
        async with trio.open_nursery() as nursery:

            async def detect_disconnect() -> None:
                # A watch client sends nothing after its request; EOF or data means it is gone.
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await stream.receive_some(_RECEIVE)
                nursery.cancel_scope.cancel()

            nursery.start_soon(detect_disconnect)
            try:
                await response.produce(writer)
                finished = True
            except Cut:
                pass
            nursery.cancel_scope.cancel()
        if not finished:
            # Cut on purpose, or the client went away: drop the connection without the
            # terminating chunk so the client sees the stream break.
            return False
        await stream.send_all(conn.send(h11.EndOfMessage()))
        return True

    async def _refuse(
        self, conn: h11.Connection, stream: trio.abc.Stream, exc: h11.RemoteProtocolError
    ) -> None:
        """Answers a request h11 could not parse, when an answer can still be sent."""
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        response = self.errors.malformed(exc.error_status_hint, str(exc))
        response.headers.append(("Connection", "close"))
        with contextlib.suppress(h11.LocalProtocolError, *_GONE):
            await self._respond(conn, stream, "GET", response)


def _is_disconnect(exc: BaseException) -> bool:
    """True when ``exc`` (or every leaf of an exception group) means the peer went away."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_disconnect(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)
