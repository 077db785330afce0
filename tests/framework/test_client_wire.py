"""The client's HTTP/1.1 transport (``kubetrio.runtime.client.wire``) against a bare server that
counts connections and requests, so keep-alive, replaced connections, timeouts and the
``Authorization`` each kind of user sends show."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import pykube
import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, WatchEvent
from kubetrio.runtime.http.pool import IDLE_TIMEOUT


@dataclass
class Seen:
    connections: int = 0
    closed_by_client: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)


async def _read_request(stream: trio.SocketStream, buffer: bytearray) -> dict[str, str] | None:
    while b"\r\n\r\n" not in buffer:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += await stream.receive_some(65536)
    del buffer[:]
    buffer += rest[length:]
    return {
        "method": method,
        "target": target,
        "auth": headers.get("authorization", ""),
        "body": rest[:length].decode(),
    }


async def _serve(mode: str, seen: Seen, stream: trio.SocketStream) -> None:
    """``keep``: answer on a kept-alive connection; ``close``: hang up after each answer
    without saying so (as an idle timeout does); ``silent``: never answer; ``unauthorized``:
    answer 401 to everything; ``chunked``: as ``keep``, a watch answered as a chunked body."""
    seen.connections += 1
    buffer = bytearray()
    try:
        while (request := await _read_request(stream, buffer)) is not None:
            seen.requests.append(request)
            if mode == "silent":
                await trio.sleep_forever()
            if mode == "unauthorized":
                status = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":401}'
                head = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                await stream.send_all(
                    f"{head}Content-Length: {len(status)}\r\n\r\n".encode() + status
                )
                continue
            if mode == "chunked" and "watch=true" in request["target"]:
                await _send_watch(stream, len(seen.requests))
                continue
            body = json.dumps({"n": len(seen.requests), **request}).encode()
            head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            await stream.send_all(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            if mode == "close":
                return
        seen.closed_by_client += 1
    except trio.BrokenResourceError:
        return
    finally:
        await trio.aclose_forcefully(stream)


async def _send_watch(stream: trio.SocketStream, n: int) -> None:
    """A watch answer as kube-apiserver sends one: chunked, one event per chunk, here in
    writes that split chunks anywhere, then the last chunk and a trailer."""
    events = b"".join(
        b"%x\r\n%s\r\n" % (len(line), line)
        for line in (
            json.dumps(
                {
                    "type": "ADDED",
                    "object": {
                        "kind": "ConfigMap",
                        "apiVersion": "v1",
                        "metadata": {"name": f"c{n}-{i}", "resourceVersion": str(i + 1)},
                    },
                }
            ).encode()
            + b"\n"
            for i in range(3)
        )
    )
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    data = head + events + b"0\r\nX-Trailer: t\r\n\r\n"
    for at in range(0, len(data), 37):
        await stream.send_all(data[at : at + 37])


@asynccontextmanager
async def bare_server(mode: str) -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, partial(_serve, mode, seen), 0, host="127.0.0.1")
        )
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}", seen
        nursery.cancel_scope.cancel()


async def test_requests_share_one_kept_alive_connection(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with bare_server("keep") as (url, seen):
        kube = Client.from_url(url, token="t0k")
        for _ in range(10):
            answer = json.loads(await kube.request("GET", "/x", params={"a": "b c"}))
        assert answer["target"] == "/x?a=b+c"
        assert answer["auth"] == "Bearer t0k"
        assert seen.connections == 1


async def test_a_watch_read_to_its_end_leaves_its_connection_for_the_next_request(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A chunked watch answer: every event arrives whatever way the writes split it, and the
    connection is reused afterwards."""
    async with bare_server("chunked") as (url, seen):
        kube = Client.from_url(url, token="t0k")
        for round_ in range(2):
            send, receive = trio.open_memory_channel[list[WatchEvent[ConfigMap]]](10)
            await kube.watch(ConfigMap, send)
            names = [e.obj.metadata.name async for batch in receive for e in batch if e.obj]
            assert names == [f"c{2 * round_ + 1}-{i}" for i in range(3)]
            answer = json.loads(await kube.request("GET", "/x"))
            assert answer["n"] == 2 * round_ + 2
        assert seen.connections == 1


async def test_connections_idle_for_long_are_closed(mock_clock: trio.testing.MockClock) -> None:
    """A burst of concurrent requests opens a connection each; once they have stood unused for
    ``IDLE_TIMEOUT`` the next request closes them and opens a fresh one."""
    async with bare_server("keep") as (url, seen):
        kube = Client.from_url(url, token="t0k")
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(partial(kube.request, "GET", "/x"))
        assert seen.connections == 3
        await kube.request("GET", "/x")  # reuses one of them
        assert (seen.connections, seen.closed_by_client) == (3, 0)
        await trio.sleep(IDLE_TIMEOUT + 1)  # the simulated clock: nobody asks for a while
        await kube.request("GET", "/x")
        await trio.testing.wait_all_tasks_blocked()  # the server saw the closes
        assert (seen.connections, seen.closed_by_client) == (4, 3)


async def test_a_connection_the_server_dropped_while_idle_is_replaced(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The server hangs up after each answer without a ``Connection: close`` (as an idle
    timeout does): no request is lost on the dead connection, and each reaches the server
    exactly once (a write must not be applied twice)."""
    async with bare_server("close") as (url, seen):
        kube = Client.from_url(url, token="t0k")
        for i in range(5):
            body = f'{{"i":{i}}}'.encode()
            answer = json.loads(await kube.request("POST" if i % 2 else "GET", "/x", body=body))
            assert answer["body"] == body.decode()
        assert [r["body"] for r in seen.requests] == [f'{{"i":{i}}}' for i in range(5)]
        assert seen.connections == 5


async def test_a_server_that_never_answers_times_out_with_a_clear_error() -> None:
    """On the real clock (a request in flight holds a test's mock clock): --kube-api-timeout."""
    async with bare_server("silent") as (url, seen):
        kube = Client.from_url(url, token="t0k", timeout=0.2)
        with trio.fail_after(10), pytest.raises(ApiError) as failure:
            await kube.request("GET", "/x")
        assert failure.value.reason == "Unreachable"
        assert str(failure.value.message) == f"no response from the API server at {url}: timed out"
        assert len(seen.requests) == 1


async def test_a_password_is_sent_as_basic_authentication(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A kubeconfig user with ``username``/``password`` (what pykube-ng's session used to send
    from a worker thread) goes out as every other user does, on one kept-alive connection."""
    async with bare_server("keep") as (url, seen):
        doc = {
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"username": "ann", "password": "pw"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
        kube = Client.from_config(pykube.KubeConfig(doc))
        await kube.request("GET", "/x")
        send, receive = trio.open_memory_channel[list[WatchEvent[ConfigMap]]](10)
        await kube.watch(ConfigMap, send)
        async for _ in receive:
            pass  # the bare server's one JSON answer is no watch event: an ERROR ends it
        assert [r["auth"] for r in seen.requests] == [f"Basic {_base64('ann:pw')}"] * 2
        assert seen.connections == 1


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_the_emulator_answers_a_typed_round_trip_on_one_connection(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """The emulator (kube-apiserver's double) keeps the connection alive across verbs."""
    kube = Client.from_url(emu.url, token=emu.token)
    for i in range(3):
        await kube.create(
            ConfigMap,
            {"metadata": {"name": f"c{i}", "namespace": "default"}},
        )
    idle = sum(len(connections) for connections in kube.wire.pool._idle.values())
    assert idle == 1


async def test_connections_with_descriptors_above_1024_are_still_reused(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A manager with many open files gets socket descriptors above select()'s FD_SETSIZE
    (1024); the idle check must still work there rather than call every connection dropped."""
    fillers = []
    try:
        while (fd := os.open(os.devnull, os.O_RDONLY)) < 1100:
            fillers.append(fd)
        os.close(fd)
        async with bare_server("keep") as (url, seen):
            kube = Client.from_url(url, token="t0k")
            for _ in range(5):
                await kube.request("GET", "/x")
            assert seen.connections == 1
    finally:
        for fd in fillers:
            os.close(fd)


async def test_a_refused_token_that_cannot_be_renewed_is_sent_once(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A 401 is tried again only with renewed credentials, for a request and a watch alike: a
    static token the server refuses is sent once, and the 401 reaches the caller."""
    async with bare_server("unauthorized") as (url, seen):
        kube = Client.from_url(url, token="t0k")
        with pytest.raises(ApiError) as failure:
            await kube.request("GET", "/x")
        assert failure.value.status == 401
        assert len(seen.requests) == 1
        send, receive = trio.open_memory_channel[list[WatchEvent[ConfigMap]]](10)
        await kube.watch(ConfigMap, send)
        events = [event async for batch in receive for event in batch]
        assert [(e.type, e.error and e.error.status) for e in events] == [("ERROR", 401)]
        assert len(seen.requests) == 2
