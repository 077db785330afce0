"""The manager's HTTP endpoints over real sockets on 127.0.0.1, with a tiny h11 client."""

from __future__ import annotations

import errno
import gzip
import socket
from collections.abc import AsyncIterator, Callable

import h11
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.runtime.metrics.server import (
    BindAddress,
    BindAddressError,
    ListenError,
    Listening,
    ManagerHTTPServer,
    parse_bind_address,
)


class Client:
    """One keep-alive connection; each ``get`` is one request/response cycle."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.CLIENT)

    async def request(
        self, method: str, target: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        if self.conn.our_state is h11.DONE:
            self.conn.start_next_cycle()
        head = [("Host", "test"), *(headers or {}).items()]
        await self.stream.send_all(
            self.conn.send(h11.Request(method=method, target=target, headers=head))
            + self.conn.send(h11.EndOfMessage())
        )
        status = 0
        got: dict[str, str] = {}
        body = bytearray()
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                got = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return status, got, bytes(body)
            else:
                raise AssertionError(f"unexpected {event!r}")

    async def get(
        self, target: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        return await self.request("GET", target, headers)


def registry_with_metrics() -> CollectorRegistry:
    registry = CollectorRegistry()
    reconciles = Counter(
        "controller_runtime_reconcile_total", "reconciles", ["controller"], registry=registry
    )
    reconciles.labels("machine").inc(3)
    Gauge("workqueue_depth", "depth", ["name"], registry=registry).labels("machine").set(7)
    return registry


@pytest.fixture
async def nursery() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as nursery:
        yield nursery
        nursery.cancel_scope.cancel()


async def start(
    nursery: trio.Nursery, server: ManagerHTTPServer, endpoints: set[str] | str = "all"
) -> tuple[Client, Listening]:
    listening = await nursery.start(server.serve, "127.0.0.1:0", endpoints)
    assert isinstance(listening, Listening)
    stream = await trio.open_tcp_stream("127.0.0.1", listening.port)
    nursery.start_soon(_close_at_exit, stream)
    return Client(stream), listening


async def _close_at_exit(stream: trio.SocketStream) -> None:
    try:
        await trio.sleep_forever()
    finally:
        await trio.aclose_forcefully(stream)


async def test_metrics_in_prometheus_text_format(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(registry_with_metrics()))
    status, headers, body = await client.get("/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert int(headers["content-length"]) == len(body)
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    total = families["controller_runtime_reconcile"].samples
    assert [(s.name, s.labels, s.value) for s in total] == [
        ("controller_runtime_reconcile_total", {"controller": "machine"}, 3.0)
    ]
    assert families["workqueue_depth"].samples[0].value == 7.0


async def test_metrics_openmetrics_when_asked(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(registry_with_metrics()))
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, headers, body = await client.get("/metrics", {"Accept": accept})
    assert status == 200
    assert headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert body.endswith(b"# EOF\n")


async def test_metrics_gzip_when_accepted(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(registry_with_metrics()))
    status, headers, body = await client.get("/metrics", {"Accept-Encoding": "gzip, deflate"})
    assert status == 200
    assert headers["content-encoding"] == "gzip"
    assert int(headers["content-length"]) == len(body)
    assert b"workqueue_depth" in gzip.decompress(body)
    _, plain_headers, _ = await client.get("/metrics", {"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in plain_headers


async def test_metrics_name_filter(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(registry_with_metrics()))
    _, _, body = await client.get("/metrics?name[]=workqueue_depth")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert names == {"workqueue_depth"}


async def test_metrics_render_off_the_event_loop(nursery: trio.Nursery) -> None:
    """A collector that blocks until the loop answers proves rendering runs in a thread."""
    registry = CollectorRegistry()
    loop_ran = trio.Event()
    token = trio.lowlevel.current_trio_token()

    class Waiting:
        def collect(self) -> list[object]:
            # Runs in the worker thread: wait for the event loop to be free to set the event.
            trio.from_thread.run_sync(loop_ran.set, trio_token=token)
            return []

    registry.register(Waiting())  # type: ignore[arg-type]
    client, _ = await start(nursery, ManagerHTTPServer(registry))
    status, _, _ = await client.get("/metrics")
    assert status == 200
    assert loop_ran.is_set()


async def test_keep_alive_and_head(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(registry_with_metrics()))
    for _ in range(3):
        status, _, body = await client.get("/healthz")
        assert (status, body) == (200, b"ok")
    status, headers, body = await client.request("HEAD", "/metrics")
    assert status == 200
    assert body == b""
    assert int(headers["content-length"]) > 0
    status, _, body = await client.get("/readyz")
    assert (status, body) == (200, b"ok")


async def test_unknown_paths_and_methods(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(CollectorRegistry()))
    assert (await client.get("/"))[0] == 404
    assert (await client.get("/metricsx"))[0] == 404
    assert (await client.get("/metrics/x"))[0] == 404
    status, headers, _ = await client.request("POST", "/metrics")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    assert (await client.request("DELETE", "/healthz"))[0] == 405
    assert (await client.get("/healthz"))[0] == 200  # the connection survived all of that


async def test_health_checks_pass_fail_verbose_and_single(nursery: trio.Nursery) -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    synced = False

    def informers_synced() -> str | None:
        return None if synced else "informer for Machine not synced"

    def broken() -> str | None:
        raise RuntimeError("lost\nconnection")

    server.add_healthz_check("ping", lambda: None)
    server.add_readyz_check("informers", informers_synced)
    server.add_readyz_check("a-ping", lambda: None)
    client, _ = await start(nursery, server)

    status, _, body = await client.get("/healthz?verbose")
    assert (status, body) == (200, b"[+]ping ok\nhealthz check passed\n")

    status, _, body = await client.get("/readyz")
    assert status == 500
    assert body.decode().splitlines() == [
        "[+]a-ping ok",
        "[-]informers failed: informer for Machine not synced",
        "readyz check failed",
    ]
    status, _, body = await client.get("/readyz/informers")
    assert (status, body) == (500, b"internal server error: informer for Machine not synced\n")
    assert await _status_body(client, "/readyz/a-ping") == (200, b"ok")
    assert (await client.get("/readyz/nope"))[0] == 404
    assert (await client.get("/healthz/informers"))[0] == 404  # a readyz check, not a healthz one

    status, _, body = await client.get("/readyz?exclude=informers&verbose")
    assert status == 200
    assert b"[+]informers excluded: ok\n" in body

    synced = True
    assert await _status_body(client, "/readyz") == (200, b"ok")

    server.add_healthz_check("broken", broken)
    status, _, body = await client.get("/healthz")
    assert status == 500
    assert b"[-]broken failed: lost connection\n" in body


async def _status_body(client: Client, target: str) -> tuple[int, bytes]:
    status, _, body = await client.get(target)
    return status, body


async def test_no_checks_is_healthy(nursery: trio.Nursery) -> None:
    client, _ = await start(nursery, ManagerHTTPServer(CollectorRegistry()))
    assert await _status_body(client, "/readyz?verbose") == (
        200,
        b"[+]ping ok\nreadyz check passed\n",
    )


async def test_a_check_reason_never_leaks_a_token(nursery: trio.Nursery) -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    server.add_readyz_check("join", lambda: "kubeadm join --token abcdef.0123456789abcdef failed")
    client, _ = await start(nursery, server)
    _, _, body = await client.get("/readyz")
    assert b"abcdef.0123456789abcdef" not in body
    assert b"[REDACTED]" in body


async def test_separate_listeners_serve_only_their_endpoints(nursery: trio.Nursery) -> None:
    server = ManagerHTTPServer(registry_with_metrics())
    metrics, _ = await start(nursery, server, {"metrics"})
    probes, _ = await start(nursery, server, {"healthz", "readyz"})
    assert (await metrics.get("/metrics"))[0] == 200
    assert (await metrics.get("/healthz"))[0] == 404
    assert (await probes.get("/metrics"))[0] == 404
    assert (await probes.get("/readyz"))[0] == 200


async def test_disabled_address_reports_none_and_returns() -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    async with trio.open_nursery() as nursery:
        assert await nursery.start(server.serve, "0", {"metrics"}) is None
        assert await nursery.start(server.serve, "", "all") is None
    # Both returned on their own: the nursery closed without being cancelled.


async def test_port_in_use_names_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = ManagerHTTPServer(CollectorRegistry())
        with pytest.raises(ListenError) as caught:
            await server.serve(f"127.0.0.1:{port}", {"metrics"})
    assert caught.value.errno == errno.EADDRINUSE
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "metrics" in str(caught.value)


async def test_bad_endpoint_names_are_rejected() -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    with pytest.raises(ValueError, match="unknown \\['pprof'\\]"):
        await server.serve("127.0.0.1:0", {"metrics", "pprof"})


async def test_cancellation_closes_listener_and_idle_connections_promptly(
    io_clock: trio.testing.MockClock,
) -> None:
    """Promptly on the mock clock: had the shutdown waited on any timer (the idle connection's
    keep-alive timeout, a drain period), the clock would have jumped to it."""
    server = ManagerHTTPServer(registry_with_metrics())
    async with trio.open_nursery() as nursery:
        listening = await nursery.start(server.serve, "127.0.0.1:0", "all")
        assert isinstance(listening, Listening)
        stream = await trio.open_tcp_stream("127.0.0.1", listening.port)
        client = Client(stream)
        assert (await client.get("/healthz"))[0] == 200  # now an idle keep-alive connection
        started = trio.current_time()
        nursery.cancel_scope.cancel()
    elapsed = trio.current_time() - started
    assert elapsed < 0.05
    assert await stream.receive_some(10) == b""  # the server closed our connection
    await stream.aclose()
    with pytest.raises(OSError):
        await trio.open_tcp_stream("127.0.0.1", listening.port)


@pytest.fixture
def io_clock() -> trio.testing.MockClock:
    """Jumps only once every task has been blocked a while, so real socket I/O completes first."""
    return trio.testing.MockClock(autojump_threshold=0.02)


async def test_idle_keep_alive_connection_is_closed_after_idle_timeout(
    io_clock: trio.testing.MockClock,
) -> None:
    server = ManagerHTTPServer(CollectorRegistry(), idle_timeout=30)
    async with trio.open_nursery() as nursery:
        listening = await nursery.start(server.serve, "127.0.0.1:0", "all")
        assert isinstance(listening, Listening)
        stream = await trio.open_tcp_stream("127.0.0.1", listening.port)
        assert (await Client(stream).get("/healthz"))[0] == 200
        before = trio.current_time()
        assert await stream.receive_some(10) == b""
        assert trio.current_time() - before >= 30
        await stream.aclose()
        nursery.cancel_scope.cancel()


async def test_malformed_request_gets_400_and_close(nursery: trio.Nursery) -> None:
    _, listening = await start(nursery, ManagerHTTPServer(CollectorRegistry()))
    stream = await trio.open_tcp_stream("127.0.0.1", listening.port)
    await stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
    received = bytearray()
    while chunk := await stream.receive_some(4096):
        received += chunk
    assert received.startswith(b"HTTP/1.1 400 ")
    await stream.aclose()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8080", BindAddress("127.0.0.1", 8080)),
        (":8080", BindAddress(None, 8080)),
        ("0.0.0.0:0", BindAddress("0.0.0.0", 0)),
        ("[::1]:8443", BindAddress("::1", 8443)),
        ("localhost:9090", BindAddress("localhost", 9090)),
        ("0", None),
        ("", None),
    ],
)
def test_parse_bind_address(text: str, expected: BindAddress | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("8080", "expected"),
        ("127.0.0.1:http", "port must be a number"),
        ("127.0.0.1:70000", "port must be a number"),
        ("127.0.0.1:-1", "port must be a number"),
        ("::1:8080", "brackets"),
        ("[nope]:80", "not an IPv6 address"),
        ("bad host:80", "not an IP address or host name"),
        ("300.1.1.1:80", "not an IP address or host name"),
    ],
)
def test_parse_bind_address_errors_name_the_value(text: str, fragment: str) -> None:
    with pytest.raises(BindAddressError) as caught:
        parse_bind_address(text)
    assert repr(text) in str(caught.value)
    assert fragment in str(caught.value)


def test_bind_address_renders_back() -> None:
    assert str(BindAddress(None, 80)) == ":80"
    assert str(BindAddress("::1", 80)) == "[::1]:80"


def test_check_registration_is_validated() -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    server.add_healthz_check("ping", lambda: None)
    with pytest.raises(ValueError, match="already registered"):
        server.add_healthz_check("ping", lambda: None)
    with pytest.raises(ValueError, match="check name 'a/b'"):
        server.add_readyz_check("a/b", lambda: None)
    not_callable: Callable[[], str | None] = "x"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="expected a callable"):
        server.add_readyz_check("x", not_callable)


def ipv6_loopback_works() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


async def test_all_interfaces_is_one_port_for_ipv4_and_ipv6(nursery: trio.Nursery) -> None:
    server = ManagerHTTPServer(CollectorRegistry())
    listening = await nursery.start(server.serve, ":0", {"healthz"})
    assert isinstance(listening, Listening)
    assert len(listening.addresses) == 1
    hosts = ["127.0.0.1", "::1"] if ipv6_loopback_works() else ["127.0.0.1"]
    for host in hosts:
        stream = await trio.open_tcp_stream(host, listening.port)
        assert (await Client(stream).get("/healthz"))[:3:2] == (200, b"ok")
        await stream.aclose()


async def test_all_interfaces_port_in_use_names_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ListenError, match=f"cannot listen on :{port} for healthz, readyz"):
            await ManagerHTTPServer(CollectorRegistry()).serve(f":{port}", {"healthz", "readyz"})


async def test_connection_close_and_http_1_0(nursery: trio.Nursery) -> None:
    _, listening = await start(nursery, ManagerHTTPServer(CollectorRegistry()))
    for request in (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /healthz HTTP/1.0\r\n\r\n",
    ):
        stream = await trio.open_tcp_stream("127.0.0.1", listening.port)
        await stream.send_all(request)
        received = bytearray()
        while chunk := await stream.receive_some(4096):  # ends because the server closes
            received += chunk
        assert received.startswith(b"HTTP/1.1 200 ")
        assert received.endswith(b"\r\n\r\nok")
        await stream.aclose()


async def test_large_registry(nursery: trio.Nursery) -> None:
    registry = CollectorRegistry()
    counter = Counter("kubetrio_test_total", "many series", ["object"], registry=registry)
    for i in range(5000):
        counter.labels(f"namespace-{i}/machine-{i}").inc(i)
    client, _ = await start(nursery, ManagerHTTPServer(registry))
    status, _, body = await client.get("/metrics")
    assert status == 200
    families = text_string_to_metric_families(body.decode())
    totals = [s for f in families for s in f.samples if s.name == "kubetrio_test_total"]
    assert len(totals) == 5000
    assert sum(s.value for s in totals) == sum(range(5000))


async def test_a_failing_handler_answers_500_and_keeps_serving(nursery: trio.Nursery) -> None:
    class Broken(ManagerHTTPServer):
        async def _metrics(self, request: object) -> object:  # type: ignore[override]
            raise RuntimeError("bug")

    client, _ = await start(nursery, Broken(CollectorRegistry()))
    assert await _status_body(client, "/metrics") == (500, b"internal server error\n")
    assert await _status_body(client, "/healthz") == (200, b"ok")
