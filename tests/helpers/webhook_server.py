"""A small HTTPS admission or conversion webhook for tests, served in the test's trio run (h11 over
``trio.SSLStream``, a ``trustme`` CA), so the emulator's webhook calls go over real TLS.

``handler(request) -> response`` gets the review's ``request`` and returns the
``response`` fields (``uid`` is filled in); ``reviews`` keeps every review received.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import trio
import trustme

from kubetrio.emulator.testclient import EmuClient, Reply
from kubetrio.runtime.util.inflight import request_in_flight


class HeldClient(EmuClient):
    """An EmuClient whose requests hold the mock clock, as our own client's do: while the
    emulator waits on a webhook for it, the call is what holds the clock in its stead."""

    async def request(self, *args: Any, **kwargs: Any) -> Reply:
        with request_in_flight():
            return await super().request(*args, **kwargs)


Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class WebhookServer:
    url: str  # https://127.0.0.1:PORT
    ca_bundle: str  # base64 PEM, for clientConfig.caBundle
    handler: Handler
    reviews: list[dict[str, Any]] = field(default_factory=list)

    def config(self, path: str = "/") -> dict[str, str]:
        return {"url": self.url + path, "caBundle": self.ca_bundle}


def patch_of(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Response fields of a mutating webhook answering with a JSON patch."""
    raw = base64.b64encode(json.dumps(ops).encode()).decode()
    return {"allowed": True, "patchType": "JSONPatch", "patch": raw}


async def _serve_one(server: WebhookServer, stream: trio.SSLStream[trio.SocketStream]) -> None:
    conn = h11.Connection(h11.SERVER)
    body = b""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                return
        review = json.loads(body)
        server.reviews.append(review)
        response = await server.handler(review["request"])
        answer = json.dumps(
            {
                "apiVersion": review["apiVersion"],  # an AdmissionReview or a ConversionReview
                "kind": review["kind"],
                "response": {"uid": review["request"]["uid"], **response},
            }
        ).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))]
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
        await stream.send_all(conn.send(h11.Data(data=answer)) + conn.send(h11.EndOfMessage()))
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
        pass
    finally:
        await trio.aclose_forcefully(stream)


@asynccontextmanager
async def serve_webhook(
    handler: Handler, ca: trustme.CA | None = None
) -> AsyncIterator[WebhookServer]:
    """Serve ``handler`` on 127.0.0.1 for the duration of the block."""
    ca = ca or trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    bundle = base64.b64encode(ca.cert_pem.bytes()).decode()
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    server = WebhookServer(f"https://127.0.0.1:{port}", bundle, handler)

    async def handle(tcp: trio.SocketStream) -> None:
        await _serve_one(server, trio.SSLStream(tcp, ctx, server_side=True))

    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handle, listeners)
        yield server
        nursery.cancel_scope.cancel()
