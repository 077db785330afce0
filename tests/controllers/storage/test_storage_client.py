"""The storage HTTP client against a scripted raw HTTP server: status mapping, reply
validation, one-line errors, no-response failures, timeouts on the mock clock, metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

import msgspec
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.controllers.storage import (
    BackendError,
    BackendUnavailable,
    HttpStorageBackend,
    NodeInUse,
    NodeLocked,
    NodeNotFound,
    StorageNode,
    list_storage_nodes,
    storage_metrics,
)
from kubetrio.controllers.storage.transport import Endpoint

# A reply: raw bytes to write, or None to hang without answering.
Reply = bytes | None
Script = Callable[[str, str], Reply]


def http(status: int, body: bytes | str, reason: str = "X") -> bytes:
    raw = body.encode() if isinstance(body, str) else body
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(raw)}\r\nConnection: close\r\n\r\n"
    ).encode() + raw


def nodes_reply(*names: str) -> bytes:
    items = [{"id": f"id-{n}", "name": n, "health": "online", "extra": 1} for n in names]
    return http(200, msgspec.json.encode({"items": items}))


class FakeServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[tuple[str, str]] = []
        self.url = ""

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(4096)
            if not chunk:
                return
            data += chunk
        method, target, _ = data.split(b"\r\n", 1)[0].decode().split(" ", 2)
        self.requests.append((method, target))
        reply = self.script(method, target)
        if reply is None:
            await trio.sleep_forever()
        await stream.send_all(reply)
        await stream.aclose()


@asynccontextmanager
async def server(script: Script, prefix: str = "/api/v2") -> AsyncIterator[FakeServer]:
    fake = FakeServer(script)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, fake.handle, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        fake.url = f"http://127.0.0.1:{port}{prefix}"
        yield fake
        nursery.cancel_scope.cancel()


@pytest.fixture
def io_clock() -> trio.testing.MockClock:
    """Autojump only after 50 ms idle: real loopback I/O is in flight (as in tests/helpers)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


def routes(list_reply: Reply, delete_reply: Reply = b"") -> Script:
    return lambda method, _: list_reply if method == "GET" else delete_reply


async def test_list_validates_and_ignores_unknown_fields() -> None:
    async with server(routes(nodes_reply("a", "b"))) as fake:
        nodes = await HttpStorageBackend(fake.url).list_nodes()
        assert nodes == [
            StorageNode(id="id-a", name="a", health="online"),
            StorageNode(id="id-b", name="b", health="online"),
        ]
        assert fake.requests == [("GET", "/api/v2/nodes")]
        assert await list_storage_nodes(fake.url) == nodes


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            http(200, '{"items": [{"id": 1, "name": "a"}]}'),
            r"Expected `str`, got `int` - at `\$.items\[0\].id`",
        ),
        (http(200, '{"items": [{"name": "a"}]}'), r"missing required field `id`"),
        (http(200, "<html>"), r"invalid reply: JSON is malformed"),
        (http(200, '{"nodes": []}'), r"missing required field `items`"),
        (http(503, '{"error": "etcd\\nis down"}'), r"answered 503: etcd is down$"),
        (http(500, "<h1>oops</h1>" + "x" * 1000), r"answered 500: <h1>oops</h1>x+$"),
    ],
)
async def test_bad_list_replies_are_one_line_errors(reply: bytes, message: str) -> None:
    async with server(routes(reply)) as fake:
        with pytest.raises(BackendError, match=message) as info:
            await HttpStorageBackend(fake.url).list_nodes()
        text = str(info.value)
        assert "\n" not in text and text.startswith(f"storage backend: GET {fake.url}/nodes")
        assert len(text) < 500


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (http(200, "{}"), None, ""),
        (http(204, ""), None, ""),
        (http(404, ""), NodeNotFound, "storage node a: node not found"),
        (
            http(409, '{"error": "node still in use: master of v"}'),
            NodeInUse,
            "storage node a: node still in use: master of v",
        ),
        (http(409, ""), NodeInUse, "storage node a: node still in use$"),
        (http(423, ""), NodeLocked, "storage node a: node lock has not yet expired$"),
        (http(423, '{"error": 5}'), NodeLocked, r'storage node a: \{"error": 5\}'),
        (
            http(500, '{"error": "boom"}'),
            BackendError,
            r"storage node a: DELETE .*/nodes/id-a answered 500: boom",
        ),
    ],
)
async def test_delete_maps_statuses(
    reply: bytes, error: type[Exception] | None, message: str
) -> None:
    async with server(routes(nodes_reply("a"), reply)) as fake:
        backend = HttpStorageBackend(fake.url)
        if error is None:
            await backend.delete_node("a")
        else:
            with pytest.raises(error, match=message):
                await backend.delete_node("a")
        assert fake.requests == [("GET", "/api/v2/nodes"), ("DELETE", "/api/v2/nodes/id-a")]


async def test_unknown_name_is_not_found_without_a_delete_and_ids_are_quoted() -> None:
    odd = http(200, '{"items": [{"id": "a/b c", "name": "odd"}]}')
    async with server(routes(odd, http(200, "{}")), prefix="") as fake:
        backend = HttpStorageBackend(fake.url + "/")
        with pytest.raises(NodeNotFound) as info:
            await backend.delete_node("missing")
        assert info.value.node == "missing" and info.value.reason == "node not found"
        assert fake.requests == [("GET", "/nodes")]
        await backend.delete_node("odd")
        assert fake.requests[-1] == ("DELETE", "/nodes/a%2Fb%20c")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"", "connection closed before a response$"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{",
            "bad HTTP response: connection closed mid-answer",
        ),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "bad HTTP response"),
    ],
)
async def test_no_usable_response_is_unavailable(reply: bytes, message: str) -> None:
    async with server(routes(reply)) as fake:
        with pytest.raises(BackendUnavailable, match=message):
            await HttpStorageBackend(fake.url).list_nodes()


async def test_refused_connection_is_unavailable_and_counted() -> None:
    async with server(routes(b"")) as fake:
        url = fake.url
    registry = CollectorRegistry()
    backend = HttpStorageBackend(url, metrics=storage_metrics(registry))
    with pytest.raises(BackendUnavailable, match=f"storage backend: GET {url}/nodes: "):
        await backend.delete_node("a")
    errors = registry.get_sample_value(
        "kubetrio_storage_backend_request_errors_total", {"op": "list"}
    )
    assert errors == 1


async def test_a_silent_backend_times_out_on_the_operation_deadline(
    io_clock: trio.testing.MockClock,
) -> None:
    registry = CollectorRegistry()
    metrics = storage_metrics(registry)
    calls: list[float] = []

    def slow_delete(method: str, _: str) -> Reply:
        calls.append(trio.current_time())
        return nodes_reply("a") if method == "GET" else None

    async with server(slow_delete) as fake:
        backend = HttpStorageBackend(fake.url, timeout=20, metrics=metrics)
        started = trio.current_time()
        with pytest.raises(BackendUnavailable, match=r"DELETE .*/nodes/id-a: no answer within 20s"):
            await backend.delete_node("a")
        assert trio.current_time() - started == pytest.approx(20, abs=0.1)
    count = registry.get_sample_value(
        "kubetrio_storage_backend_request_duration_seconds_count", {"op": "delete"}
    )
    total = registry.get_sample_value(
        "kubetrio_storage_backend_request_duration_seconds_sum", {"op": "delete"}
    )
    assert count == 1 and total == pytest.approx(20, abs=0.1)
    errors = registry.get_sample_value(
        "kubetrio_storage_backend_request_errors_total", {"op": "delete"}
    )
    assert errors == 1


def test_metric_series_exist_from_the_start() -> None:
    registry = CollectorRegistry()
    storage_metrics(registry)
    assert storage_metrics(registry) is storage_metrics(registry)
    for result in ("deleted", "not_found", "in_use", "locked", "error"):
        value = registry.get_sample_value("kubetrio_storage_node_deletes_total", {"result": result})
        assert value == 0
    for name in ("kubetrio_storage_gc_runs_total", "kubetrio_storage_gc_deleted_total"):
        assert registry.get_sample_value(name) == 0
    for op in ("list", "delete"):
        assert (
            registry.get_sample_value(
                "kubetrio_storage_backend_request_duration_seconds_count", {"op": op}
            )
            == 0
        )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("storage:5705", "expected an http"),
        ("ftp://storage", "expected an http"),
        ("http://", "expected an http"),
        ("http://storage:99999/x", "bad port"),
    ],
)
def test_bad_urls_are_refused_by_name(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Endpoint.parse(url)


def test_endpoint_defaults() -> None:
    assert Endpoint.parse("https://storage.example.com/v2/") == Endpoint(
        True, "storage.example.com", 443, "/v2"
    )
    assert Endpoint.parse("http://[::1]:5705").authority == "[::1]:5705"
