"""kubetrio.runtime.http.server on in-memory streams: what the emulator relies on beyond the
manager's endpoints (tests/framework/test_httpserver.py): chunked streams, cut or abandoned, list
bodies, HEAD, and the error pages its user words."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.runtime.http.messages import Cut, Request, Response, StreamResponse, StreamWriter
from kubetrio.runtime.http.server import HttpServer


async def exchange(server: HttpServer, raw: bytes) -> bytes:
    """Everything the server sends for ``raw`` until it closes the connection."""
    client, theirs = trio.testing.memory_stream_pair()
    received = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve_connection, theirs)
        await client.send_all(raw)
        while chunk := await client.receive_some(65536):
            received += chunk
    return bytes(received)


def get(path: str, method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()


class Errors:
    def handler_failed(self) -> Response:
        return Response(500, b'{"failed":true}')

    def malformed(self, status: int, problem: str) -> Response:
        return Response(status, b'{"malformed":true}')


async def test_list_bodies_are_sent_whole_and_head_sends_none() -> None:
    async def handler(request: Request) -> Response:
        return Response(200, [b"[", b"1,2", b"]"])

    server = HttpServer(handler, max_body=1024)
    answer = await exchange(server, get("/"))
    assert b"Content-Length: 5\r\n" in answer and answer.endswith(b"\r\n\r\n[1,2]")
    head = await exchange(server, get("/", "HEAD"))
    assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Length: 5\r\n" in head
    assert head.endswith(b"\r\n\r\n")


async def test_a_finished_stream_ends_with_the_last_chunk_a_cut_one_without() -> None:
    async def handler(request: Request) -> StreamResponse:
        async def produce(writer: StreamWriter) -> None:
            await writer.send(b"one\n")
            if request.path == "/cut":
                raise Cut

        return StreamResponse(produce)

    server = HttpServer(handler, max_body=1024)
    finished = await exchange(server, get("/"))
    assert b"Transfer-Encoding: chunked\r\n" in finished
    assert finished.endswith(b"4\r\none\n\r\n0\r\n\r\n")
    cut = await exchange(server, get("/cut"))
    assert cut.endswith(b"4\r\none\n\r\n")


async def test_a_stream_ends_when_its_client_goes_away() -> None:
    ended = trio.Event()

    async def handler(request: Request) -> StreamResponse:
        async def produce(writer: StreamWriter) -> None:
            try:
                await writer.send(b"event\n")
                await trio.sleep_forever()
            finally:
                ended.set()

        return StreamResponse(produce)

    client, theirs = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(HttpServer(handler, max_body=1024).serve_connection, theirs)
        await client.send_all(b"GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
        received = bytearray()
        while b"event" not in received:
            received += await client.receive_some(65536)
        await client.aclose()
        await ended.wait()


async def test_the_users_error_pages_answer_failures() -> None:
    async def handler(request: Request) -> Response:
        raise RuntimeError("bug")

    server = HttpServer(handler, max_body=4, errors=Errors())
    failed = await exchange(server, get("/"))
    assert failed.startswith(b"HTTP/1.1 500 ") and failed.endswith(b'{"failed":true}')
    too_large = await exchange(
        server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n12345"
    )
    assert too_large.startswith(b"HTTP/1.1 413 ") and b"Connection: close\r\n" in too_large
    assert too_large.endswith(b'{"malformed":true}')
