"""One HTTPS POST to a webhook, as kube-apiserver makes it: the server verified against the
configuration's ``caBundle`` (the system's roots without one), ``timeoutSeconds`` on the trio
clock (a test's MockClock), and failures worded as Go's HTTP client words them, since users
read them in ``failed calling webhook`` errors.

The call is real I/O: it holds a test's mock clock (``clockhold.request_in_flight``) so
simulated time cannot jump while a webhook is answering.
"""

from __future__ import annotations

import base64
import functools
import ssl
from typing import Any
from urllib.parse import urlsplit

import h11
import msgspec
import trio

from kubetrio.runtime.clockhold import request_in_flight


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


async def _exchange(url: str, ctx: ssl.SSLContext, body: bytes) -> tuple[int, bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        tcp = await trio.open_tcp_stream(host, port)
    except OSError as exc:
        causes = getattr(exc.__cause__, "exceptions", [exc.__cause__])
        refused = any(isinstance(e, ConnectionRefusedError) for e in [exc, *causes])
        why = "connect: connection refused" if refused else str(exc)
        raise CallError(f"dial tcp {host}:{port}: {why}") from None
    stream = trio.SSLStream(tcp, ctx, server_hostname=host)
    conn = h11.Connection(h11.CLIENT)
    try:
        try:
            await stream.do_handshake()
        except trio.BrokenResourceError as exc:
            cause = exc.__cause__
            if isinstance(cause, ssl.SSLCertVerificationError):
                why = "x509: certificate signed by unknown authority"
                if "match" in str(cause.verify_message):
                    why = f"x509: certificate is not valid for {host}"
                raise CallError(f"tls: failed to verify certificate: {why}") from None
            raise CallError(f"remote error: tls: {cause or exc}") from None
        request = h11.Request(
            method="POST",
            target=target,
            headers=[
                ("Host", parts.netloc),
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
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return status, b"".join(chunks)
    except (trio.BrokenResourceError, h11.RemoteProtocolError) as exc:
        raise CallError(f"EOF ({exc})") from None
    finally:
        await trio.aclose_forcefully(stream)


async def post_review(client_config: dict[str, Any], seconds: int, review: Any) -> Any:
    """POST ``review`` and return the decoded answer; CallError on any failure."""
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
            status, answer = await _exchange(url, ctx, body)
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
