"""The manager's HTTP endpoints: ``/metrics``, ``/healthz`` and ``/readyz``, on trio.

Served by ``kubetrio.runtime.http`` (h11 over trio) rather than prometheus-client's threaded
server: it stops the moment its cancel scope is cancelled (the threaded one polls every 0.5 s), and
it lives in the manager's nursery like everything else.

Metrics and probes usually listen on different addresses (controller-runtime's
``--metrics-bind-address`` and ``--health-probe-bind-address``), so ``serve`` takes the set of
endpoints one listener exposes and the manager calls it once per address.

With ``tls`` the listener speaks only TLS (the context is asked for at each connection, so a
reloaded certificate serves the next one), and a
``metrics_filter`` decides before ``/metrics`` is served, as controller-runtime's metrics
``Filter`` wraps its handler (``kubetrio.runtime.metrics.secure`` provides both).

Health semantics are controller-runtime's (``pkg/healthz``): named checks, all must pass; failures
are always listed, successes only with ``?verbose``; ``?exclude=name`` skips a check;
``/healthz/<name>`` runs one check; no checks at all means healthy.
"""

from __future__ import annotations

import functools
import gzip
import re
import ssl
from collections.abc import Awaitable, Callable, Collection
from typing import Final, Literal, get_args

import trio
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from kubetrio.runtime.http.listen import (
    BindAddress,
    BindAddressError,
    ListenError,
    Listening,
    open_listeners,
    parse_bind_address,
)
from kubetrio.runtime.http.messages import Request, Response
from kubetrio.runtime.http.server import HttpServer, text_response
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


_MAX_REQUEST_BODY: Final = 64 * 1024
_CHECK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
                server = HttpServer(
                    functools.partial(self._respond, served=served, metrics_filter=metrics_filter),
                    max_body=_MAX_REQUEST_BODY,
                    idle_timeout=self.idle_timeout,
                    tls=tls,
                )
                nursery.start_soon(trio.serve_listeners, server.serve_connection, listeners)
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

    async def _respond(
        self, request: Request, served: frozenset[str], metrics_filter: MetricsFilter | None = None
    ) -> Response:
        path = request.path
        top, _, rest = path.lstrip("/").partition("/")
        if top not in served or (top == "metrics" and rest):
            return text_response(404, "404 page not found\n")
        if top == "metrics" and metrics_filter is not None:
            denied = await metrics_filter(
                request.method, path, request.headers.get("authorization", "")
            )
            if denied is not None:
                return text_response(denied[0], f"{denied[1]}\n")
        if request.method not in ("GET", "HEAD"):
            response = text_response(405, "method not allowed\n")
            response.headers.append(("Allow", "GET, HEAD"))
            return response
        if top == "metrics":
            return await self._metrics(request)
        checks = self.healthz if top == "healthz" else self.readyz
        return _health(checks, rest, request)

    async def _metrics(self, request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        registry = self.registry
        names = request.query_values("name[]")
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
            return text_response(500, "error collecting metrics\n")
        headers = [("Content-Encoding", "gzip")] if compress else []
        headers.append(("Vary", "Accept, Accept-Encoding"))
        return Response(200, body, content_type, headers)


def _health(checks: HealthChecks, rest: str, request: Request) -> Response:
    name = rest.strip("/")
    if not name:
        values = request.query_values("exclude")
        exclude = {item for value in values for item in value.split(",") if item}
        status, text = checks.aggregate(verbose="verbose" in request.query, exclude=exclude)
        return text_response(status, text)
    if name not in checks.names():
        return text_response(404, "404 page not found\n")
    reason = checks.run_one(name)
    if reason is not None and not isinstance(reason, Passing):
        return text_response(500, f"internal server error: {reason}\n")
    return text_response(200, "ok")
