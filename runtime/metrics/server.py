"""The manager's HTTP endpoints: ``/metrics``, ``/healthz`` and ``/readyz``, on trio.

One small HTTP/1.1 server (h11 over ``trio.serve_tcp``) rather than prometheus-client's threaded
server: it stops the moment its cancel scope is cancelled (the threaded one polls every 0.5 s), and
it lives in the manager's nursery like everything else. It does not share code with the emulator's
server on purpose: the manager must not depend on a test fixture.

Metrics and probes usually listen on different addresses (controller-runtime's
``--metrics-bind-address`` and ``--health-probe-bind-address``), so ``serve`` takes the set of
endpoints one listener exposes and the manager calls it once per address.

With ``tls`` the listener speaks only TLS (``trio.SSLStream`` over the same server; the context
is asked for at each connection, so a reloaded certificate serves the next one), and a
``metrics_filter`` decides before ``/metrics`` is served, as controller-runtime's metrics
``Filter`` wraps its handler (``kubetrio.runtime.metrics.secure`` provides both).

Health semantics are controller-runtime's (``pkg/healthz``): named checks, all must pass; failures
are always listed, successes only with ``?verbose``; ``?exclude=name`` skips a check;
``/healthz/<name>`` runs one check; no checks at all means healthy.
"""

from __future__ import annotations

import errno
import functools
import gzip
import ipaddress
import re
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple, get_args
from urllib.parse import parse_qs, urlsplit

import h11
import trio
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from kubetrio.runtime.metrics.prerendered import exposition
from kubetrio.runtime.util.log import get_logger, redact_text

__all__ = [
    "ENDPOINTS",
    "BindAddress",
    "BindAddressError",
    "Endpoint",
    "HealthCheck",
    "HealthChecks",
    "ListenError",
    "Listening",
    "ManagerHTTPServer",
    "MetricsFilter",
    "Passing",
    "parse_bind_address",
]

log = get_logger("kubetrio.httpserver")

Endpoint = Literal["metrics", "healthz", "readyz"]
ENDPOINTS: Final[frozenset[str]] = frozenset(get_args(Endpoint))

# A check returns None when healthy, or a reason (or raises) when not. It runs on the event loop,
# so it must be quick and must not block: read state, don't do I/O.
HealthCheck = Callable[[], str | None]
# Decides on a request to /metrics from (method, path, Authorization header): None lets it
# through, (status, text) answers it instead.
MetricsFilter = Callable[[str, str, str], Awaitable[tuple[int, str] | None]]


class Passing(str):
    """A check result that passes but has something to say (e.g. objects an informer cannot
    decode): readiness must not flap on it, yet ``?verbose`` should show it."""

    __slots__ = ()


_TEXT: Final = "text/plain; charset=utf-8"
_MAX_REQUEST_BODY: Final = 64 * 1024
_CHECK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


class BindAddressError(ValueError):
    """A bind address that cannot be parsed; the message names the value."""


class ListenError(OSError):
    """The server could not listen (port in use, address not local); names the address."""


class BindAddress(NamedTuple):
    """Where to listen. ``host`` None means every interface (``:8080``)."""

    host: str | None
    port: int

    def __str__(self) -> str:
        host = self.host or ""
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


def parse_bind_address(value: str) -> BindAddress | None:
    """Parse ``host:port``, ``:port`` or ``[v6]:port``; ``"0"`` or ``""`` mean disabled (None).

    These are controller-runtime's rules for ``--metrics-bind-address`` and
    ``--health-probe-bind-address``. Port 0 asks the kernel for a free port.
    """
    if not isinstance(value, str):
        raise BindAddressError(f"bind address: expected a string, got {value!r}")
    text = value.strip()
    if text in ("", "0"):
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise BindAddressError(
            f'bind address {value!r}: expected "host:port", ":port" or "0" to disable'
        )
    if not port_text.isdigit() or int(port_text) > 65535:
        raise BindAddressError(
            f"bind address {value!r}: port must be a number from 0 to 65535, got {port_text!r}"
        )
    port = int(port_text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise BindAddressError(
                f"bind address {value!r}: {host!r} is not an IPv6 address"
            ) from None
        return BindAddress(host, port)
    if not host:
        return BindAddress(None, port)
    if ":" in host:
        raise BindAddressError(
            f"bind address {value!r}: write an IPv6 host in brackets, [::1]:8080"
        )
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        if not _HOST_NAME.match(host) or host.replace(".", "").isdigit():
            raise BindAddressError(
                f"bind address {value!r}: {host!r} is not an IP address or host name"
            ) from None
    return BindAddress(host, port)


@dataclass(frozen=True, slots=True)
class Listening:
    """What ``serve`` reports once it accepts connections: every (host, port) it listens on."""

    addresses: tuple[tuple[str, int], ...]

    @property
    def port(self) -> int:
        """The port (the first listener's; a host name may resolve to several addresses)."""
        return self.addresses[0][1]


class HealthChecks:
    """A named set of checks with controller-runtime's aggregated and per-check responses."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "healthz" or "readyz", for the response text and logs
        self._checks: dict[str, HealthCheck] = {}

    def add(self, name: str, check: HealthCheck) -> None:
        if not isinstance(name, str) or not _CHECK_NAME.match(name):
            raise ValueError(
                f"{self.kind} check name {name!r}: use letters, digits, '.', '_' and '-'"
            )
        if name in self._checks:
            raise ValueError(f"{self.kind} check {name!r} is already registered")
        if not callable(check):
            raise TypeError(f"{self.kind} check {name!r}: expected a callable, got {check!r}")
        self._checks[name] = check

    def names(self) -> list[str]:
        return sorted(self._checks)

    def run_one(self, name: str) -> str | None:
        """The failure reason of check ``name``, None when it passes. KeyError if unknown."""
        check = self._checks[name]
        try:
            result = check()
        except Exception as exc:
            return redact_text(_one_line(str(exc) or type(exc).__name__))
        if result is None:
            return None
        if isinstance(result, Passing):
            return Passing(redact_text(_one_line(result)))
        return redact_text(_one_line(str(result) or "failed"))

    def aggregate(self, *, verbose: bool, exclude: Collection[str]) -> tuple[int, str]:
        """Status and body for ``/<kind>``: 200 ``ok`` or the listed results."""
        lines: list[str] = []
        failed = False
        for name in self.names():
            if name in exclude:
                lines.append(f"[+]{name} excluded: ok")
                continue
            reason = self.run_one(name)
            if reason is None:
                lines.append(f"[+]{name} ok")
            elif isinstance(reason, Passing):
                lines.append(f"[+]{name} ok: {reason}")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason}")
                log.info(f"{self.kind} check failed", check=name, reason=reason)
        if not self._checks:
            lines.append("[+]ping ok")
        unknown = sorted(set(exclude) - set(self._checks))
        if unknown:
            lines.append(f"warn: some health checks cannot be excluded: no matches for {unknown}")
        if failed:
            return 500, "\n".join([*lines, f"{self.kind} check failed", ""])
        if not verbose:
            return 200, "ok"
        return 200, "\n".join([*lines, f"{self.kind} check passed", ""])


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(slots=True)
class _Response:
    status: int
    body: bytes = b""
    content_type: str = _TEXT
    headers: list[tuple[str, str]] = field(default_factory=list)


def _text(status: int, text: str) -> _Response:
    return _Response(status, text.encode(), headers=[("X-Content-Type-Options", "nosniff")])


def _accepts_gzip(accept_encoding: str) -> bool:
    for item in accept_encoding.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            q = params.strip()
            return not (q.startswith("q=") and _float(q[2:]) == 0.0)
    return False


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 1.0


class ManagerHTTPServer:
    """Serves one manager's registry and health checks on as many listeners as it is given."""

    def __init__(self, registry: CollectorRegistry, *, idle_timeout: float = 120.0) -> None:
        self.registry = registry
        self.healthz = HealthChecks("healthz")
        self.readyz = HealthChecks("readyz")
        # Keep-alive connections idle this long are closed; scrapers reconnect transparently.
        self.idle_timeout = idle_timeout

    def add_healthz_check(self, name: str, check: HealthCheck) -> None:
        self.healthz.add(name, check)

    def add_readyz_check(self, name: str, check: HealthCheck) -> None:
        self.readyz.add(name, check)

    async def serve(
        self,
        bind: str,
        endpoints: Collection[str] | Literal["all"] = "all",
        *,
        tls: Callable[[], ssl.SSLContext] | None = None,
        metrics_filter: MetricsFilter | None = None,
        task_status: trio.TaskStatus[Listening | None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on ``bind`` and serve ``endpoints`` until cancelled; over TLS with the
        context ``tls`` returns, and ``/metrics`` only where ``metrics_filter`` lets it.

        Reports a ``Listening`` through ``task_status`` once connections are accepted, or None
        (and returns at once) when ``bind`` disables the listener. Raises BindAddressError for a
        malformed address and ListenError when the address cannot be bound.
        """
        served = self._endpoints(endpoints)
        address = parse_bind_address(bind)
        if address is None:
            log.info("http listener disabled", endpoints=sorted(served))
            task_status.started(None)
            return
        listeners, bound = await open_listeners(address, ", ".join(sorted(served)))
        log.info(
            "serving https" if tls else "serving http",
            addresses=[f"{h}:{p}" for h, p in bound],
            endpoints=sorted(served),
        )
        try:
            async with trio.open_nursery() as nursery:
                handler = functools.partial(
                    self._serve_connection, served=served, tls=tls, metrics_filter=metrics_filter
                )
                nursery.start_soon(trio.serve_listeners, handler, listeners)
                task_status.started(Listening(bound))
        finally:
            for listener in listeners:
                await trio.aclose_forcefully(listener)

    @staticmethod
    def _endpoints(endpoints: Collection[str] | Literal["all"]) -> frozenset[str]:
        if endpoints == "all":
            return ENDPOINTS
        if isinstance(endpoints, str):
            raise ValueError(f'endpoints: expected "all" or a set of names, got {endpoints!r}')
        chosen = frozenset(endpoints)
        unknown = chosen - ENDPOINTS
        if unknown:
            raise ValueError(
                f"endpoints: unknown {sorted(unknown)}; expected some of {sorted(ENDPOINTS)}"
            )
        if not chosen:
            raise ValueError("endpoints: expected at least one endpoint")
        return chosen

    async def _serve_connection(
        self,
        raw: trio.SocketStream,
        *,
        served: frozenset[str],
        tls: Callable[[], ssl.SSLContext] | None = None,
        metrics_filter: MetricsFilter | None = None,
    ) -> None:
        await serve_connection(
            raw,
            functools.partial(self._respond, served=served, metrics_filter=metrics_filter),
            tls=tls,
            idle_timeout=self.idle_timeout,
        )

    async def _respond(
        self, request: _Request, served: frozenset[str], metrics_filter: MetricsFilter | None = None
    ) -> _Response:
        path = request.path
        top, _, rest = path.lstrip("/").partition("/")
        if top not in served or (top == "metrics" and rest):
            return _text(404, "404 page not found\n")
        if top == "metrics" and metrics_filter is not None:
            denied = await metrics_filter(
                request.method, path, request.headers.get("authorization", "")
            )
            if denied is not None:
                return _text(denied[0], f"{denied[1]}\n")
        if request.method not in ("GET", "HEAD"):
            response = _text(405, "method not allowed\n")
            response.headers.append(("Allow", "GET, HEAD"))
            return response
        if top == "metrics":
            return await self._metrics(request)
        checks = self.healthz if top == "healthz" else self.readyz
        return _health(checks, rest, request.query)

    async def _metrics(self, request: _Request) -> _Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        registry = self.registry
        names = request.query.get("name[]")
        compress = _accepts_gzip(request.headers.get("accept-encoding", ""))

        def render() -> bytes:
            source = registry.restricted_registry(names) if names else registry
            body = exposition(source, encoder)  # kept lines of prerendered families
            return gzip.compress(body, compresslevel=6) if compress else body

        try:
            # Rendering a large registry takes 100+ ms; off the loop, and abandoned (it has no
            # side effects) if the server is cancelled meanwhile.
            body = await trio.to_thread.run_sync(render, abandon_on_cancel=True)
        except Exception:
            log.exception("rendering metrics failed")
            return _text(500, "error collecting metrics\n")
        headers = [("Content-Encoding", "gzip")] if compress else []
        headers.append(("Vary", "Accept, Accept-Encoding"))
        return _Response(200, body, content_type, headers)


def _health(checks: HealthChecks, rest: str, query: Mapping[str, list[str]]) -> _Response:
    name = rest.strip("/")
    if not name:
        exclude = {item for value in query.get("exclude", []) for item in value.split(",") if item}
        status, text = checks.aggregate(verbose="verbose" in query, exclude=exclude)
        return _text(status, text)
    if name not in checks.names():
        return _text(404, "404 page not found\n")
    reason = checks.run_one(name)
    if reason is not None and not isinstance(reason, Passing):
        return _text(500, f"internal server error: {reason}\n")
    return _text(200, "ok")


async def serve_connection(
    raw: trio.SocketStream,
    respond: Callable[[_Request], Awaitable[_Response]],
    *,
    tls: Callable[[], ssl.SSLContext] | None = None,
    idle_timeout: float = 120.0,
    max_body: int = _MAX_REQUEST_BODY,
) -> None:
    """One keep-alive HTTP/1.1 connection (TLS when ``tls``): each request to ``respond``; an
    exception there answers 500 and is logged, never ending the listener."""
    conn = h11.Connection(h11.SERVER)
    stream: trio.abc.Stream = raw
    try:
        if tls is not None:
            secure = trio.SSLStream(raw, tls(), server_side=True)
            # Plain HTTP or a client that distrusts us fails here (BrokenResourceError).
            with trio.move_on_after(idle_timeout) as handshake:
                await secure.do_handshake()
            if handshake.cancelled_caught:
                return
            stream = secure
        while True:
            request: _Request | None = None
            with trio.move_on_after(idle_timeout):  # a keep-alive client gone quiet
                request = await _read_request(conn, stream, max_body)
            if request is None:
                return
            try:
                response = await respond(request)
            except Exception:
                # A bug in one response must not take the listener (and the manager) down.
                log.exception("http handler failed", path=request.path)
                response = _text(500, "internal server error\n")
            await _send(conn, stream, request.method, response)
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except h11.RemoteProtocolError as exc:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            bad = _text(exc.error_status_hint, f"bad request: {exc}\n")
            bad.headers.append(("Connection", "close"))
            await _send(conn, stream, "GET", bad)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass  # the client went away (or spoke no TLS); nothing to answer
    finally:
        await trio.aclose_forcefully(stream)


@dataclass(slots=True)
class _Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = b""


async def _read_request(
    conn: h11.Connection, stream: trio.abc.Stream, max_body: int = _MAX_REQUEST_BODY
) -> _Request | None:
    """The next request with its body; None when the client closed the connection."""
    head: h11.Request | None = None
    size = 0
    chunks: list[bytes] = []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(16384)
            conn.receive_data(bytes(data))
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
        elif isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > max_body:
                raise h11.RemoteProtocolError("request body too large", 413)
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            parts = urlsplit(head.target.decode("latin-1"))
            headers: dict[str, str] = {}
            for raw_name, raw_value in head.headers:
                key = raw_name.decode("latin-1").lower()
                value = raw_value.decode("latin-1")
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            return _Request(
                method=head.method.decode("ascii", "replace"),
                path=parts.path,
                query=parse_qs(parts.query, keep_blank_values=True),
                headers=headers,
                body=b"".join(chunks),
            )


async def _send(
    conn: h11.Connection, stream: trio.abc.Stream, method: str, response: _Response
) -> None:
    headers = [
        ("Content-Type", response.content_type),
        ("Content-Length", str(len(response.body))),
        *response.headers,
    ]
    out = bytearray(conn.send(h11.Response(status_code=response.status, headers=headers)) or b"")
    if method != "HEAD" and response.body:
        out += conn.send(h11.Data(data=response.body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(bytes(out))


async def _listen(address: BindAddress) -> list[trio.SocketListener]:
    """Listeners for ``address``. ``:port`` is one dual-stack socket, as Go's ``net.Listen``
    makes it, so IPv4 and IPv6 share one port even for ``:0``; IPv4 only where IPv6 is off."""
    if address.host is not None:
        return await trio.open_tcp_listeners(address.port, host=address.host)
    try:
        sock = trio.socket.socket(trio.socket.AF_INET6, trio.socket.SOCK_STREAM)
    except OSError:  # a kernel or container without IPv6
        return await trio.open_tcp_listeners(address.port, host="0.0.0.0")
    try:
        sock.setsockopt(trio.socket.IPPROTO_IPV6, trio.socket.IPV6_V6ONLY, 0)
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        await sock.bind(("::", address.port))
        sock.listen(0xFFFF)  # the kernel caps this at its somaxconn, like trio's default
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
            return await trio.open_tcp_listeners(address.port, host="0.0.0.0")
        raise
    return [trio.SocketListener(sock)]


async def open_listeners(
    address: BindAddress, purpose: str
) -> tuple[list[trio.SocketListener], tuple[tuple[str, int], ...]]:
    """Listeners for ``address`` and the (host, port) each bound; ListenError naming
    ``purpose`` (what would be served there) when the address cannot be bound."""
    try:
        listeners = await _listen(address)
    except OSError as exc:
        raise ListenError(
            exc.errno, f"cannot listen on {address} for {purpose}: {exc.strerror or exc}"
        ) from exc
    return listeners, tuple(_sockname(listener) for listener in listeners)


def _sockname(listener: trio.SocketListener) -> tuple[str, int]:
    host, port, *_ = listener.socket.getsockname()
    return str(host), int(port)
