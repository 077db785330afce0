"""One HTTPS POST to a webhook, as kube-apiserver makes it: the server verified against the
configuration's ``caBundle`` (the system's roots without one), ``timeoutSeconds`` on the trio
clock (a test's MockClock), and failures worded as Go's HTTP client words them, since users
read them in ``failed calling webhook`` errors.

The call is real I/O: it is marked as a request in flight (``runtime.util.inflight``), so a
test's mock clock cannot jump while a webhook is answering.

Connections are kept alive between calls (``Connections``: one ``ConnectionPool`` of runtime's
HTTP client per webhook host, port and CA, held by each emulator), as kube-apiserver's HTTP
transport keeps them: a TLS handshake per call cost more than the review itself. A kept
connection the webhook closed meanwhile is replaced by a fresh one, once.
"""

from __future__ import annotations

import base64
import functools
import ssl
from typing import Any
from urllib.parse import urlsplit

import msgspec
import trio

from kubetrio.runtime.http.errors import ClosedEarly, NoResponse
from kubetrio.runtime.http.pool import ConnectionPool
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

_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json",
    "User-Agent": "kube-apiserver-admission",
}


class Connections:
    """Kept-alive connections by webhook host, port and CA."""

    def __init__(self) -> None:
        self._pools: dict[_Key, ConnectionPool] = {}

    def pool(self, url: str, context: ssl.SSLContext) -> ConnectionPool:
        parts = urlsplit(url)
        key = (parts.hostname or "", parts.port or 443, context)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _pool(url, context, MAX_IDLE_PER_HOST)
        return pool

    @property
    def opened(self) -> int:
        """Connections made (the benchmark's figure of reuse)."""
        return sum(pool.opened for pool in self._pools.values())

    def close(self) -> None:
        """Close every idle connection (the emulator is stopping)."""
        for pool in self._pools.values():
            pool.close()


def _pool(url: str, context: ssl.SSLContext, max_idle: int) -> ConnectionPool:
    """Always TLS, whatever the URL's scheme says (kube-apiserver requires https)."""
    return ConnectionPool(f"https://{urlsplit(url).netloc}", tls=context, max_idle=max_idle)


def _go_wording(error: NoResponse, host: str, port: int) -> str:
    """What Go's HTTP client would have said."""
    cause = error.__cause__
    if not error.connecting:
        return "EOF" if isinstance(cause, ClosedEarly) else f"EOF ({cause})"
    if isinstance(cause, OSError) and not isinstance(cause, ssl.SSLError):
        group = getattr(cause.__cause__, "exceptions", [cause.__cause__])
        refused = any(isinstance(e, ConnectionRefusedError) for e in [cause, *group])
        return f"dial tcp {host}:{port}: {'connect: connection refused' if refused else cause}"
    verify = cause.__cause__ if isinstance(cause, trio.BrokenResourceError) else cause
    if isinstance(verify, ssl.SSLCertVerificationError):
        why = "x509: certificate signed by unknown authority"
        if "match" in str(verify.verify_message):
            why = f"x509: certificate is not valid for {host}"
        return f"tls: failed to verify certificate: {why}"
    return f"remote error: tls: {verify or cause}"


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
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    calls = pool.pool(url, ctx) if pool is not None else _pool(url, ctx, 0)
    try:
        with request_in_flight(), trio.fail_after(seconds):
            status, _, _, answer = await calls.exchange(
                "POST", target, dict(_HEADERS), body, repeat_if_stale=True
            )
    except NoResponse as exc:
        where = _go_wording(exc, parts.hostname or "", parts.port or 443)
        raise CallError(f"failed to call webhook: {shown}: {where}") from None
    except trio.TooSlowError:
        raise CallError(f"failed to call webhook: {shown}: context deadline exceeded") from None
    if status != 200:
        raise CallError(f"failed to call webhook: the server responded with status {status}")
    try:
        return msgspec.json.decode(answer)
    except msgspec.DecodeError as exc:
        raise CallError(f"received invalid webhook response: {exc}") from None
