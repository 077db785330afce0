"""One HTTP/1.1 request over trio (h11), for the storage client.

Native trio rather than a blocking library in a worker thread: a timeout is a cancel scope on
trio's clock, so cancelling a call closes its socket at once (no thread left blocked in
``recv``) and a test on a MockClock waits out a hung backend in no wall time. One connection
per request: the storage controllers make a handful of calls a minute, not a stream.

Anything that is not a complete HTTP response — refused, reset, closed early, a protocol error,
a TLS failure — is ``BackendUnavailable``; the caller never sees a raw ``OSError``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11
import trio

from kubetrio.controllers.storage.errors import BackendUnavailable

MAX_BODY = 16 * 1024 * 1024
_READ_SIZE = 65536


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a base URL points: scheme, host, port and the path prefix of every request."""

    https: bool
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"storage backend URL: expected an http(s) URL, got {url!r}")
        https = parts.scheme == "https"
        try:
            port = parts.port or (443 if https else 80)
        except ValueError:
            raise ValueError(f"storage backend URL: bad port in {url!r}") from None
        return cls(https, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{'https' if self.https else 'http'}://{self.authority}{self.prefix}{path}"


async def request(
    endpoint: Endpoint,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: list[tuple[str, str]] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> HttpReply:
    """Send one request to ``endpoint.prefix + path`` and read the whole response."""
    where = f"{method} {endpoint.url(path)}"
    try:
        return await _exchange(endpoint, method, path, body, headers or [], ssl_context)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as error:
        raise BackendUnavailable(f"storage backend: {where}: {_describe(error)}") from None
    except h11.ProtocolError as error:
        raise BackendUnavailable(f"storage backend: {where}: bad HTTP response: {error}") from None


async def _exchange(
    endpoint: Endpoint,
    method: str,
    path: str,
    body: bytes | None,
    headers: list[tuple[str, str]],
    ssl_context: ssl.SSLContext | None,
) -> HttpReply:
    stream: trio.abc.Stream
    if endpoint.https:
        stream = await trio.open_ssl_over_tcp_stream(
            endpoint.host, endpoint.port, ssl_context=ssl_context or ssl.create_default_context()
        )
    else:
        stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
    async with stream:
        conn = h11.Connection(h11.CLIENT)
        all_headers = [
            ("Host", endpoint.authority),
            ("Accept", "application/json"),
            ("Connection", "close"),
            *headers,
        ]
        if body is not None:
            all_headers += [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
            ]
        data = conn.send(
            h11.Request(method=method, target=endpoint.prefix + path, headers=all_headers)
        )
        if body is not None:
            data += conn.send(h11.Data(data=body))
        data += conn.send(h11.EndOfMessage())
        await stream.send_all(data)
        status = 0
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                received = bytes(await stream.receive_some(_READ_SIZE))
                if not received and status == 0:
                    raise BackendUnavailable(
                        f"storage backend: {method} {endpoint.url(path)}: connection closed "
                        "before a response"
                    )
                conn.receive_data(received)
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY:
                    raise BackendUnavailable(
                        f"storage backend: {method} {endpoint.url(path)}: reply larger than "
                        f"{MAX_BODY // (1024 * 1024)} MiB"
                    )
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return HttpReply(status, b"".join(chunks))
            elif isinstance(event, h11.ConnectionClosed):
                raise BackendUnavailable(
                    f"storage backend: {method} {endpoint.url(path)}: connection closed "
                    "before a complete response"
                )


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
