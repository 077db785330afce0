"""What a handler of ``kubetrio.runtime.http.server`` is given and answers: a ``Request`` read
in full (bodies are bounded, so a handler never waits on the client), and a ``Response`` with
its whole body or a ``StreamResponse`` whose producer writes chunks as they come (a watch),
ended early by raising ``Cut``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import h11
import trio

JSON = "application/json"


@dataclass(slots=True)
class Request:
    """One request, read in full, with the forms of its URL handlers look things up in."""

    method: str
    path: str  # percent-decoded, as Go's URL.Path
    query: dict[str, str]  # each parameter's last value
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes
    raw_query: str = ""

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)

    def query_values(self, name: str) -> list[str]:
        """Every value of a repeated query parameter, in order (``?name[]=a&name[]=b``)."""
        return parse_qs(self.raw_query, keep_blank_values=True).get(name, [])


@dataclass(slots=True)
class Response:
    """A whole answer; a list body is sent part by part without joining (a large LIST)."""

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
    """A chunked answer: ``produce`` writes its chunks until it returns (the stream ends) or
    raises ``Cut`` (the connection is dropped, so the client sees the stream break)."""

    produce: Callable[[StreamWriter], Awaitable[None]]
    status: int = 200
    content_type: str = JSON
    headers: list[tuple[str, str]] = field(default_factory=list)


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]
