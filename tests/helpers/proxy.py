"""An HTTP proxy for tests, served in the test's trio run: CONNECT tunnels (what a client opens
for an ``https://`` server) and absolute-form requests (``GET http://host/path``, what it sends
for a plain ``http://`` one), each logged, so a test can tell what went through it.

``refuse`` makes it answer every CONNECT with 407; ``tls`` serves the proxy itself over TLS (an
``https://`` proxy). Hosts are resolved by trio, so a test's custom resolver applies.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import urlsplit

import trio


@dataclass
class ProxyLog:
    tunnels: list[str] = field(default_factory=list)  # CONNECT targets, host:port
    forwarded: list[str] = field(default_factory=list)  # absolute-form request targets
    authorizations: list[str] = field(default_factory=list)  # Proxy-Authorization values


class _Reader:
    """Reads a stream by HTTP heads and counted bodies, keeping what came beyond them."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def head(self) -> tuple[str, list[str]] | None:
        """The request line and header lines of the next request; None at a clean end."""
        while b"\r\n\r\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.buffer += chunk
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        self.buffer = bytearray(rest)
        line, *fields = head.decode("latin-1").split("\r\n")
        return line, fields

    async def body(self, length: int) -> bytes:
        while len(self.buffer) < length:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise trio.BrokenResourceError("client closed mid-body")
            self.buffer += chunk
        body, self.buffer = bytes(self.buffer[:length]), self.buffer[length:]
        return body


async def _pipe(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
    try:
        while chunk := await source.receive_some(65536):
            await sink.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(sink)


def _split(authority: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(f"//{authority}")
    return parts.hostname or "", parts.port or default_port


async def _forward(
    log: ProxyLog, reader: _Reader, first: tuple[str, list[str]], client: trio.abc.Stream
) -> None:
    """Absolute-form requests: each one's line rewritten to origin form, the proxy's own
    header dropped; the answers flow back untouched."""
    target = urlsplit(first[0].split(" ")[1])
    upstream = await trio.open_tcp_stream(*_split(target.netloc, 80))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pipe, upstream, client)
        request: tuple[str, list[str]] | None = first
        while request is not None:
            line, fields = request
            method, absolute, version = line.split(" ")
            log.forwarded.append(absolute)
            parts = urlsplit(absolute)
            origin_form = parts.path + (f"?{parts.query}" if parts.query else "")
            kept = []
            length = 0
            for header in fields:
                name, _, value = header.partition(":")
                if name.lower() == "proxy-authorization":
                    log.authorizations.append(value.strip())
                    continue
                if name.lower() == "content-length":
                    length = int(value)
                kept.append(header)
            head = "\r\n".join([f"{method} {origin_form} {version}", *kept]) + "\r\n\r\n"
            await upstream.send_all(head.encode("latin-1") + await reader.body(length))
            request = await reader.head()
        await trio.aclose_forcefully(upstream)  # the client is done: so is the answers' pipe


async def _serve(
    log: ProxyLog, refuse: bool, tls: ssl.SSLContext | None, raw: trio.abc.Stream
) -> None:
    client: trio.abc.Stream = trio.SSLStream(raw, tls, server_side=True) if tls else raw
    try:
        reader = _Reader(client)
        first = await reader.head()
        if first is None:
            return
        line, fields = first
        if not line.startswith("CONNECT "):
            await _forward(log, reader, first, client)
            return
        target = line.split(" ")[1]
        log.tunnels.append(target)
        for header in fields:
            name, _, value = header.partition(":")
            if name.lower() == "proxy-authorization":
                log.authorizations.append(value.strip())
        if refuse:
            await client.send_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
            )
            return
        upstream = await trio.open_tcp_stream(*_split(target, 443))
        await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if reader.buffer:
            await upstream.send_all(bytes(reader.buffer))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pipe, upstream, client)
            nursery.start_soon(_pipe, client, upstream)
    except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass  # either end hung up
    finally:
        await trio.aclose_forcefully(client)


@asynccontextmanager
async def http_proxy(
    *, refuse: bool = False, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[int, ProxyLog]]:
    """A proxy on 127.0.0.1: its port and its log."""
    log = ProxyLog()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, partial(_serve, log, refuse, tls), 0, host="127.0.0.1")
        )
        yield listeners[0].socket.getsockname()[1], log
        nursery.cancel_scope.cancel()
