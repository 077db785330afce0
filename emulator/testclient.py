"""A minimal async HTTP/1.1 client (h11 over trio) for talking to the emulator from inside the
same trio run: unlike a client in a worker thread it runs on the caller's MockClock, so tests
can watch, time out and replay without real waiting."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import msgspec
import trio


@dataclass(slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


class EmuClient:
    def __init__(self, url: str, token: str | None = None) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.token = token

    def _headers(self, extra: dict[str, str] | None, body: bytes | None) -> list[tuple[str, str]]:
        headers = [("Host", f"{self.host}:{self.port}"), ("Accept", "application/json")]
        if self.token:
            headers.append(("Authorization", f"Bearer {self.token}"))
        if body is not None:
            headers.append(("Content-Length", str(len(body))))
        for k, v in (extra or {}).items():
            headers = [h for h in headers if h[0].lower() != k.lower()]
            headers.append((k, v))
        return headers

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Reply:
        raw = (
            None if body is None else body if isinstance(body, bytes) else msgspec.json.encode(body)
        )
        extra = dict(headers or {})
        if raw is not None:
            extra.setdefault("Content-Type", content_type)
        stream = await trio.open_tcp_stream(self.host, self.port)
        async with stream:
            conn = h11.Connection(h11.CLIENT)
            out = conn.send(
                h11.Request(method=method, target=path, headers=self._headers(extra, raw))
            )
            if raw is not None:
                out += conn.send(h11.Data(data=raw))
            out += conn.send(h11.EndOfMessage())
            await stream.send_all(out)
            status = 0
            resp_headers: dict[str, str] = {}
            chunks: list[bytes] = []
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    resp_headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    return Reply(status, resp_headers, b"".join(chunks))

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    @asynccontextmanager
    async def watch(self, path: str) -> AsyncIterator[WatchStream]:
        """Open a watch; yields a stream of decoded events (``None`` marks a broken stream)."""
        stream = await trio.open_tcp_stream(self.host, self.port)
        async with stream:
            conn = h11.Connection(h11.CLIENT)
            await stream.send_all(
                conn.send(h11.Request(method="GET", target=path, headers=self._headers(None, None)))
                + conn.send(h11.EndOfMessage())
            )
            yield WatchStream(conn, stream)


class WatchStream:
    def __init__(self, conn: h11.Connection, stream: trio.SocketStream) -> None:
        self._conn = conn
        self._stream = stream
        self._buf = b""
        self.status = 0
        self.ended = False  # clean end (terminating chunk)
        self.broken = False  # connection dropped mid-stream

    async def __anext__(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            if self.ended or self.broken:
                raise StopAsyncIteration
            try:
                event = self._conn.next_event()
            except h11.RemoteProtocolError:
                self.broken = True
                continue
            if event is h11.NEED_DATA:
                try:
                    data = await self._stream.receive_some(65536)
                except trio.BrokenResourceError:
                    data = b""
                self._conn.receive_data(data)
            elif isinstance(event, h11.Response):
                self.status = event.status_code
            elif isinstance(event, h11.Data):
                self._buf += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.ended = True
            elif isinstance(event, h11.ConnectionClosed):
                self.broken = True
        line, _, self._buf = self._buf.partition(b"\n")
        out: dict[str, Any] = msgspec.json.decode(line)
        return out

    def __aiter__(self) -> WatchStream:
        return self

    async def next(self) -> dict[str, Any] | None:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            return None
