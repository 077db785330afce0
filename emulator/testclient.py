"""A raw async HTTP client for talking to the emulator from inside the same trio run (runtime's
HTTP/1.1 client, one connection per request): unlike a client in a worker thread it runs on the
caller's MockClock, so tests can watch, time out and replay without real waiting. Answers come
back as they are — any status, undecoded — which is what tests of the API server's rules need.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from kubetrio.runtime.http.errors import NoResponse
from kubetrio.runtime.http.pool import ConnectionPool, Streamed
from kubetrio.runtime.http.proxy import authority


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
        self._pool = ConnectionPool(f"http://{authority(self.host, self.port)}", max_idle=0)

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for name, value in (extra or {}).items():
            for same in [k for k in headers if k.lower() == name.lower()]:
                del headers[same]
            headers[name] = value
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
        if raw is not None and not any(k.lower() == "content-type" for k in extra):
            extra["Content-Type"] = content_type
        status, _, answer_headers, answer = await self._pool.exchange(
            method, path, self._headers(extra), raw
        )
        return Reply(status, dict(answer_headers), answer)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    @asynccontextmanager
    async def watch(self, path: str) -> AsyncIterator[WatchStream]:
        """Open a watch; yields a stream of decoded events (``None`` marks a broken stream,
        one that broke before its answer began included)."""
        async with AsyncExitStack() as opened:
            try:
                answer = await opened.enter_async_context(
                    self._pool.stream("GET", path, self._headers(None))
                )
            except NoResponse as error:
                if error.connecting:
                    raise
                answer = None
            yield WatchStream(answer)


class WatchStream:
    def __init__(self, answer: Streamed | None) -> None:
        self.status = answer.status if answer is not None else 0
        self._chunks = answer.chunks() if answer is not None else None
        self._buf = b""
        self.ended = False  # clean end (terminating chunk)
        self.broken = answer is None  # connection dropped mid-stream

    async def __anext__(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            if self.ended or self.broken or self._chunks is None:
                raise StopAsyncIteration
            try:
                self._buf += await anext(self._chunks)
            except StopAsyncIteration:
                self.ended = True
            except NoResponse:
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
