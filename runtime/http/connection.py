"""One HTTP/1.1 client connection: a trio stream, the request it carries and its answer as
``httptools`` (llhttp) parses it.

Why llhttp and not h11 (which the serving side uses): every reconcile that writes is one
request, and h11's pure-Python state machine cost about 50 µs per request and answer, a tenth
of a reconcile's CPU; llhttp parses an answer in under 2 µs. Writing a request needs no state
machine: its head is formatted here, after checking that nothing in it could end a line.

An answer's body reaches the caller as whole reads: every piece llhttp hands over while one
read is parsed (a watch's events, one chunk each) is joined into one payload.
"""

from __future__ import annotations

import select
import ssl
from collections.abc import Hashable, Iterable

import httptools
import trio

from kubetrio.runtime.http.directtls import DirectTLSStream
from kubetrio.runtime.http.errors import ProtocolError

__all__ = ["READ_SIZE", "Connection", "Head"]

# What one read asks of the socket: large enough that a big answer arrives in few reads.
READ_SIZE = 256 * 1024

# Characters that would end a request line or a header line early (or inject one).
_LINE_BREAKERS = ("\r", "\n", "\0")


class Head:
    """An answer's status line and headers (names in lower case)."""

    __slots__ = ("headers", "keep_alive", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], version: str) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        tokens = headers.get("connection", "").lower().replace(" ", "").split(",")
        self.keep_alive = version == "1.1" and "close" not in tokens


class _Answer:
    """The parser's callbacks: what has arrived of one answer."""

    __slots__ = (
        "complete",
        "head",
        "head_only",
        "names",
        "parser",
        "pieces",
        "reason",
        "surplus",
        "until_close",
        "values",
    )

    def __init__(self, head_only: bool) -> None:
        self.head_only = head_only  # the answer to a HEAD: no body whatever its headers say
        self.parser = httptools.HttpResponseParser(self)
        self.head: Head | None = None
        self.reason = ""
        self.names: list[str] = []
        self.values: list[str] = []
        self.pieces: list[bytes] = []
        self.complete = False
        self.until_close = False  # no length and not chunked: the body ends with the stream
        self.surplus = False  # bytes after the answer: the connection cannot be reused

    def on_message_begin(self) -> None:
        if self.complete:
            self.surplus = True

    def on_status(self, reason: bytes) -> None:
        self.reason += reason.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.names.append(name.decode("latin-1").lower())
        self.values.append(value.decode("latin-1"))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        headers = dict(zip(self.names, self.values, strict=True))
        self.names, self.values = [], []
        if 100 <= status < 200:
            self.reason = ""  # 100 Continue and such: the answer is still to come
            return
        self.head = Head(status, self.reason, headers, self.parser.get_http_version())
        if self.head_only:
            self.complete = True
            return
        self.until_close = (
            "content-length" not in headers
            and "chunked" not in headers.get("transfer-encoding", "").lower()
            and status not in (204, 304)
        )

    def on_body(self, piece: bytes) -> None:
        if piece:
            self.pieces.append(piece)

    def on_message_complete(self) -> None:
        if self.head is not None:  # not an interim answer's end
            self.complete = True


class Connection:
    """A stream and the exchange it carries; ``key`` is the pool's (the TLS identity it was
    opened with); ``heard`` whether any byte of the current answer arrived."""

    __slots__ = ("_answer", "heard", "idle_since", "key", "stream")

    def __init__(self, stream: trio.abc.Stream, key: Hashable) -> None:
        self.stream = stream
        self.key = key
        self.heard = False
        self.idle_since = 0.0  # trio clock: when the pool last kept it idle
        self._answer: _Answer | None = None

    def request(
        self,
        method: str,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes | None,
    ) -> bytes:
        """The request's bytes (a ``Content-Length`` added); the connection then expects its
        answer. ``ValueError`` if the method, target or a header could break the message."""
        lines = [f"{method} {target} HTTP/1.1"]
        for name, value in headers:
            if not name or " " in name or ":" in name:
                raise ValueError(f"HTTP header name {name!r}: empty, or with a space or colon")
            lines.append(f"{name}: {value}")
        lines.append(f"Content-Length: {len(body) if body else 0}")
        head = "\r\n".join(lines)
        breaks = len(lines) - 1  # the line ends put there: any other is someone's input
        if (
            head.count("\r") != breaks
            or head.count("\n") != breaks
            or "\0" in head
            or " " in method + target
        ):
            raise ValueError(_refused(method, target, headers))
        self._answer = _Answer(head_only=method == "HEAD")
        self.heard = False
        data = (head + "\r\n\r\n").encode("latin-1")
        return data + body if body else data

    async def read_head(self) -> Head:
        """The answer's status and headers (interim 1xx answers skipped). ``ProtocolError``
        when the bytes are not HTTP or stop mid-answer; ``EOFError`` when the stream ends
        before any byte of the answer (or ``trio.BrokenResourceError`` from the stream)."""
        answer = self._answer
        assert answer is not None, "read_head before request"
        while answer.head is None:
            await self._receive(answer)
        return answer.head

    async def read_body(self) -> bytes | None:
        """What has arrived of the body since the last call, reading once when nothing has;
        None once it is all read. Pieces parsed from one read come as one payload."""
        answer = self._answer
        assert answer is not None and answer.head is not None, "read_body before read_head"
        while not answer.pieces:
            if answer.complete:
                return None
            await self._receive(answer)
        pieces = answer.pieces
        answer.pieces = []
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    async def _receive(self, answer: _Answer) -> None:
        data = await self.stream.receive_some(READ_SIZE)
        if not data:
            if answer.until_close and answer.head is not None:
                answer.complete = True  # the stream's end is the body's
                answer.surplus = True  # and the connection's
                return
            if self.heard:
                raise ProtocolError("connection closed mid-answer")
            raise EOFError("connection closed before any answer")
        self.heard = True
        try:
            answer.parser.feed_data(data)
        except httptools.HttpParserError as error:
            raise ProtocolError(f"malformed HTTP answer: {error}") from None

    def reusable(self) -> bool:
        """Ready for another request: the last answer was read whole and the server keeps
        the connection open, or no request began."""
        answer = self._answer
        if answer is None:
            return True
        if (
            not answer.complete
            or answer.surplus
            or answer.head is None
            or not answer.head.keep_alive
        ):
            return False
        self._answer = None
        self.heard = False
        return True

    def dropped(self) -> bool:
        """True when an idle connection's socket is readable: the server closed it (or sent
        something unasked), so it must not carry a request (urllib3's
        ``is_connection_dropped``)."""
        socket = self._socket()
        if socket is None:
            return False
        if isinstance(socket, ssl.SSLSocket) and socket.pending():
            return True  # decrypted bytes nobody asked for
        # poll, not select: select() refuses descriptors above FD_SETSIZE (1024), which a busy
        # manager's sockets reach, and every idle connection would then count as dropped.
        poller = select.poll()
        try:
            poller.register(socket.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def close_now(self) -> None:
        """Close without a TLS goodbye: never blocks, safe in a cancelled scope."""
        if isinstance(self.stream, DirectTLSStream):
            self.stream.close_now()
            return
        socket = self._socket()
        if socket is not None:
            socket.close()

    def _socket(self) -> trio.socket.SocketType | ssl.SSLSocket | None:
        stream = self.stream
        if isinstance(stream, DirectTLSStream):
            return stream.socket
        while isinstance(stream, trio.SSLStream):  # TLS inside a proxy's TLS, too
            stream = stream.transport_stream
        return stream.socket if isinstance(stream, trio.SocketStream) else None


def _refused(method: str, target: str, headers: Iterable[tuple[str, str]]) -> str:
    for name, value in headers:
        if any(c in name + value for c in _LINE_BREAKERS):
            return f"HTTP header {name!r}: a line break or NUL in its value"
    return f"HTTP request line {method} {target!r}: a line break, NUL or space"
