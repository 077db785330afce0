"""One HTTP/1.1 request to the storage backend, on runtime's HTTP client.

Native trio rather than a blocking library in a worker thread: a timeout is a cancel scope on
trio's clock, so cancelling a call closes its socket at once (no thread left blocked in
``recv``) and a test on a MockClock waits out a hung backend in no wall time. One connection
per request: the storage controllers make a handful of calls a minute, not a stream.

Anything that is not a complete HTTP response — refused, reset, closed early, a protocol error,
a TLS failure, a reply over ``MAX_BODY`` — is ``BackendUnavailable``; the caller never sees a
raw ``OSError``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from kubetrio.controllers.storage.errors import BackendUnavailable
from kubetrio.runtime.http.errors import NoResponse, ProtocolError
from kubetrio.runtime.http.pool import ConnectionPool

MAX_BODY = 16 * 1024 * 1024


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
    pool = ConnectionPool(endpoint.url(""), tls=ssl_context, max_idle=0)
    fields = {"Accept": "application/json", "Connection": "close", **dict(headers or [])}
    if body is not None:
        fields["Content-Type"] = "application/json"
    try:
        async with pool.stream(method, path, fields, body) as answer:
            chunks: list[bytes] = []
            size = 0
            async for chunk in answer.chunks():
                size += len(chunk)
                if size > MAX_BODY:
                    raise BackendUnavailable(
                        f"storage backend: {where}: reply larger than "
                        f"{MAX_BODY // (1024 * 1024)} MiB"
                    )
                chunks.append(chunk)
            return HttpReply(answer.status, b"".join(chunks))
    except NoResponse as error:
        raise BackendUnavailable(f"storage backend: {where}: {_describe(error)}") from None


def _describe(error: NoResponse) -> str:
    cause = error.__cause__
    if isinstance(cause, ProtocolError):
        return f"bad HTTP response: {cause}"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return str(cause or error) or type(cause).__name__
