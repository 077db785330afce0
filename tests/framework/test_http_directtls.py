"""``DirectTLSStream``: TLS by OpenSSL on the socket, against a TLS server on a real TCP port
(trio's own ``SSLStream`` serving), including what the pool builds for ``https://``."""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.runtime.certs.serving import self_signed, server_context
from kubetrio.runtime.http.connection import Connection
from kubetrio.runtime.http.directtls import DirectTLSStream
from kubetrio.runtime.http.pool import ConnectionPool
from kubetrio.runtime.http.tls import client_context

BIG = bytes(range(256)) * 4096  # 1 MiB: more than a socket's buffers hold at once


class Server:
    """A TLS server on 127.0.0.1: ``port``, its CA's bundle, and what each connection does."""

    def __init__(self, port: int, ca: Path) -> None:
        self.port = port
        self.ca = ca


async def _echo(stream: trio.SSLStream[trio.SocketStream]) -> None:
    """Echo until the client stops; a line ``close`` ends the connection from this side."""
    try:
        while data := await stream.receive_some(65536):
            if data == b"close\n":
                await stream.aclose()
                return
            if data.startswith(b"GET "):
                body = b"hello"
                await stream.send_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                continue
            await stream.send_all(data)
    except trio.BrokenResourceError:
        pass


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    pair = self_signed("localhost", ("127.0.0.1",))
    assert pair.ca_pem is not None
    ca = tmp_path / "ca.pem"
    ca.write_bytes(pair.ca_pem)
    context = server_context(pair)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_ssl_over_tcp, _echo, 0, context, host="127.0.0.1")
        )
        yield Server(listeners[0].transport_listener.socket.getsockname()[1], ca)
        nursery.cancel_scope.cancel()


async def connect(server: Server, verify: str | bool | None = None) -> DirectTLSStream:
    tcp = await trio.open_tcp_stream("127.0.0.1", server.port)
    context = client_context(str(server.ca) if verify is None else verify)
    return await DirectTLSStream.connect(tcp, context, "127.0.0.1")


async def test_a_megabyte_goes_there_and_back_whole(server: Server) -> None:
    stream = await connect(server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.send_all, BIG)
        received = bytearray()
        while len(received) < len(BIG):
            received += await stream.receive_some(100_000)
    assert received == BIG
    await stream.aclose()


async def test_the_servers_close_is_an_empty_read(server: Server) -> None:
    stream = await connect(server)
    await stream.send_all(b"close\n")
    assert await stream.receive_some() == b""
    await stream.aclose()


async def test_an_untrusted_certificate_is_refused(server: Server, tmp_path: Path) -> None:
    other = self_signed("localhost", ("127.0.0.1",)).ca_pem
    assert other is not None
    stranger = tmp_path / "other-ca.pem"
    stranger.write_bytes(other)
    with pytest.raises(ssl.SSLCertVerificationError):
        await connect(server, verify=str(stranger))


async def test_a_waiting_receive_is_cancelled_and_the_stream_closes(
    server: Server, mock_clock: trio.testing.MockClock
) -> None:
    stream = await connect(server)
    with trio.move_on_after(5) as scope:  # nothing comes: the clock jumps once all wait
        await stream.receive_some()
    assert scope.cancelled_caught
    await stream.aclose()
    assert stream.socket.fileno() == -1


async def test_the_pool_speaks_https_over_direct_tls_and_keeps_the_connection(
    server: Server,
) -> None:
    pool = ConnectionPool(f"https://127.0.0.1:{server.port}", tls=client_context(str(server.ca)))
    for _ in range(3):
        status, _, _, body = await pool.exchange("GET", "/", {}, None)
        assert (status, body) == (200, b"hello")
    assert pool.opened == 1
    idle: list[Connection] = pool._idle[None]
    assert isinstance(idle[0].stream, DirectTLSStream)
    pool.close()
