"""``kubetrio.runtime.http.chunked``: chunked bodies undone whatever way the reads split them,
and malformed ones refused (the watch path reads every event through it)."""

from __future__ import annotations

import random

import pytest

from kubetrio.runtime.http.chunked import Dechunker, MalformedChunk


def encode(payloads: list[bytes], extension: bytes, trailers: bytes) -> bytes:
    chunks = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in payloads)
    return chunks + b"0\r\n" + trailers + b"\r\n"


@pytest.mark.parametrize("seed", range(20))
def test_any_split_of_the_reads_gives_the_payload(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        payloads = [rng.randbytes(rng.randrange(1, 300)) for _ in range(rng.randrange(0, 6))]
        extension = rng.choice([b"", b";name=value", b"  "])
        trailers = rng.choice([b"", b"X-Trailer: 1\r\n", b"A: b\r\nC: d\r\n"])
        body = encode(payloads, extension, trailers)
        dechunk, out, at = Dechunker(), b"", 0
        while not dechunk.done:
            assert at < len(body), "the body ended before the last chunk was recognised"
            step = rng.randrange(1, 40)
            out += dechunk.feed(body[at : at + step])
            at += step
        assert out == b"".join(payloads)
        assert dechunk.left == b""


def test_one_read_of_many_events_is_one_piece() -> None:
    events = [b'{"type":"ADDED"}\n'] * 3
    assert Dechunker().feed(encode(events, b"", b"")[:-5]) == b"".join(events)


def test_bytes_after_the_body_are_left() -> None:
    dechunk = Dechunker()
    assert dechunk.feed(b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1") == b"hi"
    assert dechunk.done and dechunk.left == b"HTTP/1.1"


@pytest.mark.parametrize(
    "body",
    [b"zz\r\n", b"-1\r\n", b"1_0\r\n", b"0x3\r\n", b"\r\n", b"3\r\nabcXY", b"f" * 2000],
)
def test_malformed_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(MalformedChunk):
        Dechunker().feed(body)


def test_reads_of_exactly_one_chunk_each() -> None:
    """A watch's usual read: one whole chunk, then the next, then the last chunk."""
    dechunk = Dechunker()
    events = [b'{"type":"ADDED","n":%d}\n' % i for i in range(3)]
    assert [dechunk.feed(b"%x\r\n%s\r\n" % (len(e), e)) for e in events] == events
    assert dechunk.feed(b"1;ext=1\r\nx\r\n") == b"x"
    assert not dechunk.done
    assert dechunk.feed(b"0\r\n\r\n") == b"" and dechunk.done
