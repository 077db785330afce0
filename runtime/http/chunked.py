"""HTTP/1.1 chunked transfer coding, undone a whole read at a time.

Why: a watch answer is a chunked body of one chunk per event. Read through h11, every chunk
is its own ``Data`` event, each a trip through h11's state machine and its line reader —
the largest part of what reading a watched event cost (``docs/performance.md``). This undoes
the coding of everything one read brought in a few ``bytes.find`` calls, and hands back the
payload of all the complete chunk data in it as one piece. (RFC 9112 section 7.1.)

Example::

    dechunk = Dechunker()
    dechunk.feed(b"5\\r\\nhello\\r\\n0\\r\\n\\r\\n")  # b"hello"; dechunk.done is True
"""

from __future__ import annotations

__all__ = ["Dechunker", "MalformedChunk"]

# A chunk-size line longer than this is not one (h11 allows the same: its line limit).
MAX_SIZE_LINE = 1024
HEX_DIGITS = b"0123456789abcdefABCDEF"


class MalformedChunk(ValueError):
    """The body is not valid chunked coding."""


class Dechunker:
    """Feed it what arrives; it returns the payload bytes complete so far. ``done`` once the
    last chunk and the trailer section (ignored) are in; bytes after them are ``left``."""

    __slots__ = ("_buffer", "_remaining", "done", "left")

    def __init__(self) -> None:
        self._buffer = b""
        # Bytes of the current chunk's data still to come; -1: a size line is next, -2: the
        # CRLF after a chunk's data is next, -3: the trailer section is next.
        self._remaining = -1
        self.done = False
        self.left = b""

    def feed(self, data: bytes) -> bytes:
        if self._remaining == -1 and not self._buffer:
            # The common read of a watch: exactly one whole chunk (one event).
            line_end = data.find(b"\r\n", 0, MAX_SIZE_LINE)
            if line_end > 0:
                size_text = data[:line_end]
                if not size_text.strip(HEX_DIGITS):
                    start = line_end + 2
                    end = start + int(size_text, 16)
                    if end > start and len(data) == end + 2 and data.endswith(b"\r\n"):
                        return data[start:end]
        buffer = self._buffer + data if self._buffer else data
        remaining = self._remaining
        pieces: list[bytes] = []
        at, end = 0, len(buffer)
        while at < end:
            if remaining > 0:
                stop = min(end, at + remaining)
                pieces.append(buffer[at:stop])
                remaining -= stop - at
                at = stop
                if remaining == 0:
                    remaining = -2
            elif remaining == -2:
                if end - at < 2:
                    break
                if buffer[at : at + 2] != b"\r\n":
                    raise MalformedChunk("no CRLF after a chunk's data")
                at += 2
                remaining = -1
            elif remaining == -1:
                line_end = buffer.find(b"\r\n", at, at + MAX_SIZE_LINE)
                if line_end < 0:
                    if end - at >= MAX_SIZE_LINE:
                        raise MalformedChunk("chunk-size line too long")
                    break
                size_text = buffer[at:line_end].split(b";", 1)[0].rstrip(b" \t")
                if not size_text or size_text.strip(HEX_DIGITS):
                    raise MalformedChunk(f"bad chunk size {size_text[:20]!r}")
                size = int(size_text, 16)
                at = line_end + 2
                remaining = size if size else -3
            else:  # the trailer section: header lines, then an empty line
                if buffer.startswith(b"\r\n", at):
                    blank = at
                else:
                    blank = buffer.find(b"\r\n\r\n", at)
                    if blank < 0:
                        break
                    blank += 2
                self.done = True
                self.left = buffer[blank + 2 :]
                at = end
        self._buffer = buffer[at:] if at < end else b""
        self._remaining = remaining
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)
