"""A small HTTP/1.1 server: h11 on trio.serve_tcp, with keep-alive, chunked streaming responses
that end promptly when the client goes away, and a prefix router so further APIs (the
simulated cloud, the simulated storage service) can be mounted on the same port.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import h11
import msgspec
import trio

log = logging.getLogger(__name__)

JSON = "application/json"
_MAX_BODY = 64 * 1024 * 1024
_COALESCE = 64 * 1024


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)


@dataclass(slots=True)
class Response:
    status: int = 200
    body: bytes | list[bytes] = b""
    content_type: str = JSON
    headers: list[tuple[str, str]] = field(default_factory=list)


class StreamWriter:
    """What a streaming handler writes to: each ``send`` becomes one HTTP chunk."""

    def __init__(self, conn: h11.Connection, stream: trio.abc.Stream) -> None:
        self._conn = conn
        self._stream = stream

    async def send(self, data: bytes) -> None:
        if data:
            await self._stream.send_all(self._conn.send(h11.Data(data=data)))


class Cut(Exception):
    """Raised by a streaming handler to end the stream abruptly (no terminating chunk)."""


@dataclass(slots=True)
class StreamResponse:
    produce: Callable[[StreamWriter], Awaitable[None]]
    status: int = 200
    content_type: str = JSON
    headers: list[tuple[str, str]] = field(default_factory=list)


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]


def json_response(
    body: Any, status: int = 200, headers: list[tuple[str, str]] | None = None
) -> Response:
    return Response(status, msgspec.json.encode(body), JSON, headers or [])


class Router:
    """Longest-prefix dispatch; the fallback handles everything else (the Kubernetes API)."""

    def __init__(self, fallback: Handler) -> None:
        self._routes: list[tuple[str, Handler]] = []
        self._fallback = fallback

    def mount(self, prefix: str, handler: Handler) -> None:
        self._routes.append((prefix.rstrip("/"), handler))
        self._routes.sort(key=lambda r: -len(r[0]))

    def resolve(self, path: str) -> Handler:
        for prefix, handler in self._routes:
            if path == prefix or path.startswith(prefix + "/"):
                return handler
        return self._fallback


def _error_body(status: int, message: str) -> bytes:
    reason = {400: "BadRequest", 500: "InternalError"}.get(status, "Unknown")
    return msgspec.json.encode(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": status,
        }
    )


class HttpServer:
    def __init__(self, handler: Callable[[Request], Awaitable[Response | StreamResponse]]) -> None:
        self._handler = handler

    async def serve_connection(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=1024 * 1024)
        try:
            while True:
                req = await self._read_request(conn, stream)
                if req is None:
                    return
                try:
                    resp = await self._handler(req)
                except Exception:
                    log.exception("handler failed method=%s path=%s", req.method, req.path)
                    resp = Response(
                        500, _error_body(500, "Internal error occurred: handler failed")
                    )
                keep = await self._respond(conn, stream, resp)
                if not keep or conn.our_state is h11.MUST_CLOSE:
                    return
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    return
        except h11.RemoteProtocolError as exc:
            await self._send_protocol_error(conn, stream, exc)
        except Exception as exc:
            # Never let one connection take the listener down; a vanished client is routine.
            if not _is_disconnect(exc):
                log.exception("connection failed")
        finally:
            await trio.aclose_forcefully(stream)

    async def _read_request(self, conn: h11.Connection, stream: trio.abc.Stream) -> Request | None:
        head: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(bytes(data))
                continue
            if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > _MAX_BODY:
                    raise h11.RemoteProtocolError("request body too large", 413)
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                target = head.target.decode("latin-1")
                parts = urlsplit(target)
                headers: dict[str, str] = {}
                for k, v in head.headers:
                    name = k.decode("latin-1").lower()
                    value = v.decode("latin-1")
                    headers[name] = f"{headers[name]},{value}" if name in headers else value
                return Request(
                    method=head.method.decode("ascii"),
                    path=unquote(parts.path),
                    query=dict(parse_qsl(parts.query, keep_blank_values=True)),
                    headers=headers,
                    body=b"".join(chunks),
                )

    async def _respond(
        self, conn: h11.Connection, stream: trio.abc.Stream, resp: Response | StreamResponse
    ) -> bool:
        if isinstance(resp, StreamResponse):
            return await self._stream(conn, stream, resp)
        body = resp.body
        length = sum(map(len, body)) if isinstance(body, list) else len(body)
        headers = [
            ("Content-Type", resp.content_type),
            ("Content-Length", str(length)),
            *resp.headers,
        ]
        out = [conn.send(h11.Response(status_code=resp.status, headers=headers))]
        parts = body if isinstance(body, list) else [body]
        for part in parts:
            if part:
                out.extend(conn.send_with_data_passthrough(h11.Data(data=part)) or ())
        out.append(conn.send(h11.EndOfMessage()))
        if length < _COALESCE:
            await stream.send_all(b"".join(out))
            return True
        # Big bodies: send large parts as they are (no copy), small neighbours coalesced.
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
        self, conn: h11.Connection, stream: trio.abc.Stream, resp: StreamResponse
    ) -> bool:
        headers = [
            ("Content-Type", resp.content_type),
            ("Transfer-Encoding", "chunked"),
            ("Cache-Control", "no-cache, private"),
            *resp.headers,
        ]
        await stream.send_all(conn.send(h11.Response(status_code=resp.status, headers=headers)))
        writer = StreamWriter(conn, stream)
        finished = False
        async with trio.open_nursery() as nursery:

            async def detect_disconnect() -> None:
                # A watch client sends nothing after its request; EOF or data means it is gone.
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await stream.receive_some(65536)
                nursery.cancel_scope.cancel()

            nursery.start_soon(detect_disconnect)
            try:
                await resp.produce(writer)
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

    async def _send_protocol_error(
        self, conn: h11.Connection, stream: trio.abc.Stream, exc: h11.RemoteProtocolError
    ) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        status = exc.error_status_hint
        body = _error_body(status, f"malformed HTTP request: {exc}")
        gone = (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError)
        with contextlib.suppress(*gone):
            await stream.send_all(
                conn.send(
                    h11.Response(
                        status_code=status,
                        headers=[
                            ("Content-Type", JSON),
                            ("Content-Length", str(len(body))),
                            ("Connection", "close"),
                        ],
                    )
                )
                + conn.send(h11.Data(data=body))
                + conn.send(h11.EndOfMessage())
            )


_DISCONNECTS = (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError)


def _is_disconnect(exc: BaseException) -> bool:
    """True when ``exc`` (or every leaf of an exception group) means the peer went away."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_disconnect(e) for e in exc.exceptions)
    return isinstance(exc, _DISCONNECTS)
