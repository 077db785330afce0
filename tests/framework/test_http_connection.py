"""``kubetrio.runtime.http.connection``: a client connection's request bytes and its answer's
head and body, whatever way the reads split the server's bytes, and malformed answers refused.

The server side is a trio in-memory stream written by the test, byte for byte: the point is
the parsing of exactly these bytes (the pool's behaviour over real servers is in
``test_client_wire``)."""

from __future__ import annotations

import itertools
import random

import pytest
import trio
import trio.testing

from kubetrio.runtime.http.connection import Connection, Head
from kubetrio.runtime.http.errors import ProtocolError


def chunked(payloads: list[bytes], extension: bytes = b"", trailers: bytes = b"") -> bytes:
    chunks = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in payloads)
    return chunks + b"0\r\n" + trailers + b"\r\n"


async def exchange(
    answer: bytes, splits: list[int] | None = None, method: str = "GET", close: bool = False
) -> tuple[Connection, int, dict[str, str], list[bytes]]:
    """Send a request on a connection whose server answers ``answer`` in pieces cut at
    ``splits``, each read on its own, then read it: the connection, status, headers and body
    pieces as read."""
    client, server = trio.testing.memory_stream_pair()
    connection = Connection(client, key=None)
    await client.send_all(connection.request(method, "/x", [("Host", "h")], None))
    request = await server.receive_some(65536)
    assert request.startswith(f"{method} /x HTTP/1.1\r\n".encode())
    read: dict[str, object] = {}

    async def client_reads() -> None:
        try:
            head = await connection.read_head()
            pieces = []
            while (piece := await connection.read_body()) is not None:
                pieces.append(piece)
        except (ProtocolError, EOFError) as error:
            read["error"] = error
            return
        read.update(head=head, pieces=pieces)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client_reads)
        for start, end in itertools.pairwise([0, *(splits or []), len(answer)]):
            await trio.testing.wait_all_tasks_blocked()  # the reader took the last piece
            await server.send_all(answer[start:end])
        if close:
            await trio.testing.wait_all_tasks_blocked()
            await server.send_eof()
    if "error" in read:
        raise read["error"]  # type: ignore[misc]
    head = read["head"]
    assert isinstance(head, Head)
    return connection, head.status, head.headers, read["pieces"]  # type: ignore[return-value]


def test_the_request_is_a_head_and_its_body() -> None:
    connection = Connection(trio.testing.memory_stream_pair()[0], key=None)
    data = connection.request("PATCH", "/api/v1/x?a=b+c", [("Host", "h"), ("A", "b c")], b"{}")
    assert data == (
        b"PATCH /api/v1/x?a=b+c HTTP/1.1\r\nHost: h\r\nA: b c\r\nContent-Length: 2\r\n\r\n{}"
    )


@pytest.mark.parametrize(
    ("method", "target", "headers", "refused"),
    [
        ("GET", "/x", [("Authorization", "Bearer t\r\nX-Injected: 1")], "'Authorization'"),
        ("GET", "/x", [("A", "b\nc")], "'A'"),
        ("GET", "/x", [("A", "b\0")], "'A'"),
        ("GET", "/x", [("Bad Name", "v")], "'Bad Name'"),
        ("GET", "/x", [("Bad:Name", "v")], "'Bad:Name'"),
        ("GET", "/x y", [], "request line"),
        ("GET", "/x\r\nHost: evil", [], "request line"),
    ],
)
def test_a_request_that_could_break_the_message_is_refused(
    method: str, target: str, headers: list[tuple[str, str]], refused: str
) -> None:
    connection = Connection(trio.testing.memory_stream_pair()[0], key=None)
    with pytest.raises(ValueError, match=refused):
        connection.request(method, target, headers, None)


@pytest.mark.parametrize("seed", range(10))
async def test_any_split_of_a_chunked_answer_gives_its_body(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        payloads = [rng.randbytes(rng.randrange(1, 300)) for _ in range(rng.randrange(0, 6))]
        extension = rng.choice([b"", b";name=value"])
        trailers = rng.choice([b"", b"X-Trailer: 1\r\n", b"A: b\r\nC: d\r\n"])
        answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(
            payloads, extension, trailers
        )
        splits = sorted(rng.sample(range(1, len(answer)), min(8, len(answer) - 1)))
        connection, status, _, pieces = await exchange(answer, splits)
        assert status == 200
        assert b"".join(pieces) == b"".join(payloads)
        assert connection.reusable()


async def test_the_events_of_one_read_are_one_piece() -> None:
    events = [b'{"type":"ADDED","n":%d}\n' % i for i in range(3)]
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(events)
    head_end = answer.index(b"\r\n\r\n") + 4
    _, _, _, pieces = await exchange(answer, [head_end, len(answer) - 5])
    assert pieces == [b"".join(events)]
    # A read that ends inside an event: what came of it first, the rest with the next read.
    _, _, _, pieces = await exchange(answer, [head_end, head_end + 10])
    assert len(pieces) == 2 and b"".join(pieces) == b"".join(events)


async def test_a_sized_answer_its_headers_and_an_interim_answer_before_it() -> None:
    answer = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nAudit-ID: a-1\r\n"
        b"Content-Length: 7\r\n\r\n"
        b'{"a":1}'
    )
    connection, status, headers, pieces = await exchange(answer, [3, 40])
    assert status == 201
    assert headers == {
        "content-type": "application/json",
        "audit-id": "a-1",
        "content-length": "7",
    }
    assert b"".join(pieces) == b'{"a":1}'
    assert connection.reusable()


async def test_an_answer_without_a_length_ends_with_the_stream() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end"
    connection, status, _, pieces = await exchange(answer, [30], close=True)
    assert (status, b"".join(pieces)) == (200, b"to the end")
    assert not connection.reusable()


@pytest.mark.parametrize(
    ("answer", "reusable"),
    [
        (b"HTTP/1.1 204 No Content\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n", False),
    ],
)
async def test_a_connection_is_reused_only_after_a_whole_kept_alive_answer(
    answer: bytes, reusable: bool
) -> None:
    connection, _, _, _ = await exchange(answer)
    assert connection.reusable() is reusable


async def test_the_answer_to_a_head_request_has_no_body() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
    connection, status, headers, pieces = await exchange(answer, method="HEAD")
    assert (status, headers["content-length"], pieces) == (200, "1234", [])
    assert connection.reusable()


@pytest.mark.parametrize(
    "answer",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
    ],
)
async def test_malformed_answers_are_refused(answer: bytes) -> None:
    with pytest.raises(ProtocolError, match="malformed HTTP answer"):
        await exchange(answer)


async def test_a_stream_that_ends_mid_answer_says_so() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nonly"
    with pytest.raises(ProtocolError, match="mid-answer"):
        await exchange(answer, close=True)
