"""One HTTPS POST to a webhook, as kube-apiserver makes it: the server verified against the
configuration's ``caBundle`` (the system's roots without one), ``timeoutSeconds`` on the trio
clock (a test's MockClock), and failures worded as Go's HTTP client words them, since users
read them in ``failed calling webhook`` errors.

The call is real I/O: it is marked as a request in flight (``runtime.util.inflight``), so a
test's mock clock cannot jump while a webhook is answering.

Connections are kept alive between calls (``Connections``, one pool per emulator), as
kube-apiserver's HTTP transport keeps them: a TLS handshake per call cost more than the review
itself. A kept connection the webhook closed meanwhile is replaced by a fresh one, once.
"""

from __future__ import annotations

import base64
import functools
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import msgspec
import trio

from kubetrio.runtime.util.inflight import request_in_flight


class CallError(Exception):
    """Why a webhook could not be called (its text follows ``failed calling webhook "x": ``)."""


def resolve_url(client_config: dict[str, Any], timeout: int) -> str:
    """The URL kube-apiserver posts to (``?timeout=`` as it appends one). Services cannot be
    resolved: nothing runs in-cluster here, so a webhook must be reached by ``url``."""
    url = client_config.get("url")
    if not isinstance(url, str):
        svc = client_config.get("service") or {}
        raise CallError(
            f"the kubetrio emulator cannot reach in-cluster service "
            f'"{svc.get("namespace")}/{svc.get("name")}": give the webhook a clientConfig.url'
        )
    return f"{url}{'&' if '?' in url else '?'}timeout={timeout}s"


@functools.lru_cache(maxsize=64)
def _ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    """One context per CA bundle: building one (loading the CAs) costs more than a call."""
    if ca_bundle:
        return ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
    return ssl.create_default_context()


# Host, port and the SSL context (one per CA bundle): a connection verified against one CA is
# never used for a webhook configured with another. The key holds the context alive.
_Key = tuple[str, int, ssl.SSLContext]
MAX_IDLE_PER_HOST = 16


@dataclass
class _Connection:
    stream: trio.SSLStream[trio.SocketStream]
    http: h11.Connection
    reused: bool = False


class _Stale(Exception):
    """A kept connection turned out closed before any answer: retry on a fresh one."""


class Connections:
    """Idle connections by webhook host, port and CA; each in use by one call at a time."""

    def __init__(self) -> None:
        self._idle: dict[_Key, list[_Connection]] = {}
        self.opened = 0  # connections made (the benchmark's figure of reuse)

    def take(self, key: _Key) -> _Connection | None:
        idle = self._idle.get(key)
        if not idle:
            return None
        connection = idle.pop()
        connection.reused = True
        return connection

    def give_back(self, key: _Key, connection: _Connection) -> bool:
        """Keep it for the next call when its exchange ended cleanly; False if not kept."""
        http = connection.http
        if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
            return False
        idle = self._idle.setdefault(key, [])
        if len(idle) >= MAX_IDLE_PER_HOST:
            return False
        http.start_next_cycle()
        idle.append(connection)
        return True

    def close(self) -> None:
        """Close every idle connection (the emulator is stopping)."""
        for idle in self._idle.values():
            for connection in idle:
                connection.stream.transport_stream.socket.close()
        self._idle.clear()


async def _open(host: str, port: int, ctx: ssl.SSLContext) -> trio.SSLStream[trio.SocketStream]:
    try:
        tcp = await trio.open_tcp_stream(host, port)
    except OSError as exc:
        causes = getattr(exc.__cause__, "exceptions", [exc.__cause__])
        refused = any(isinstance(e, ConnectionRefusedError) for e in [exc, *causes])
        why = "connect: connection refused" if refused else str(exc)
        raise CallError(f"dial tcp {host}:{port}: {why}") from None
    stream = trio.SSLStream(tcp, ctx, server_hostname=host)
    try:
        await stream.do_handshake()
    except trio.BrokenResourceError as exc:
        await trio.aclose_forcefully(stream)
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = "x509: certificate signed by unknown authority"
            if "match" in str(cause.verify_message):
                why = f"x509: certificate is not valid for {host}"
            raise CallError(f"tls: failed to verify certificate: {why}") from None
        raise CallError(f"remote error: tls: {cause or exc}") from None
    except BaseException:
        await trio.aclose_forcefully(stream)
        raise
    return stream


async def _exchange(
    url: str, ctx: ssl.SSLContext, body: bytes, pool: Connections | None
) -> tuple[int, bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    key = (host, port, ctx)
    connection = pool.take(key) if pool is not None else None
    if connection is not None:
        try:
            return await _round_trip(connection, parts.netloc, url, body, pool, key)
        except _Stale:
            pass  # closed by the webhook while idle: a fresh connection, as Go's transport
    connection = _Connection(await _open(host, port, ctx), h11.Connection(h11.CLIENT))
    if pool is not None:
        pool.opened += 1
    try:
        return await _round_trip(connection, parts.netloc, url, body, pool, key)
    except _Stale:
        raise CallError("EOF") from None


async def _round_trip(
    connection: _Connection,
    netloc: str,
    url: str,
    body: bytes,
    pool: Connections | None,
    key: _Key,
) -> tuple[int, bytes]:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    stream, conn = connection.stream, connection.http
    answered = False
    kept = False
    try:
        request = h11.Request(
            method="POST",
            target=target,
            headers=[
                ("Host", netloc),
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
                ("User-Agent", "kube-apiserver-admission"),
                ("Content-Length", str(len(body))),
            ],
        )
        await stream.send_all(conn.send(request) + conn.send(h11.Data(data=body)))
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
        status, chunks = 0, []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await stream.receive_some(65536)))  # b"": EOF
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                answered = True
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.ConnectionClosed) and not answered and connection.reused:
                raise _Stale()
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                kept = pool is not None and pool.give_back(key, connection)
                return status, b"".join(chunks)
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError) as exc:
        if connection.reused and not answered:
            raise _Stale() from None
        raise CallError(f"EOF ({exc})") from None
    finally:
        if not kept:
            await trio.aclose_forcefully(stream)


async def post_review(
    client_config: dict[str, Any], seconds: int, review: Any, pool: Connections | None = None
) -> Any:
    """POST ``review`` and return the decoded answer; CallError on any failure. With ``pool``,
    on a kept connection when one is idle."""
    url = resolve_url(client_config, seconds)
    try:
        ca = client_config.get("caBundle")
        ctx = _ssl_context(str(ca) if ca else None)
    except (ValueError, ssl.SSLError) as exc:
        raise CallError(f"could not load the caBundle: {exc}") from None
    shown = f'Post "{url}"'
    body = msgspec.json.encode(review)
    try:
        with request_in_flight(), trio.fail_after(seconds):
            status, answer = await _exchange(url, ctx, body, pool)
    except CallError as exc:
        raise CallError(f"failed to call webhook: {shown}: {exc}") from None
    except trio.TooSlowError:
        raise CallError(f"failed to call webhook: {shown}: context deadline exceeded") from None
    if status != 200:
        raise CallError(f"failed to call webhook: the server responded with status {status}")
    try:
        return msgspec.json.decode(answer)
    except msgspec.DecodeError as exc:
        raise CallError(f"received invalid webhook response: {exc}") from None
