"""The manager's webhook server: admission and conversion reviews over TLS, on trio.

controller-runtime's ``webhook.Server``: one HTTPS listener (``--webhook-bind-address``,
default ``:9443``; ``0`` turns it off) serving every webhook registered through
``manager.webhook(kind)``, at the paths its builder uses::

    /mutate-<group with dots as dashes>-<version>-<kind lower>    defaulters
    /validate-<group with dots as dashes>-<version>-<kind lower>  validators
    /convert                                                      CRD conversion

It only starts when something is registered. Certificates come from ``cert_dir``
(``--webhook-cert-path``; ``tls.crt`` and ``tls.key``, reloaded when they change, as
``kubetrio.runtime.certs.watcher`` does for metrics) or, with none, from a CA made at start
whose PEM is ``ca_pem``: what a test puts in a webhook configuration's ``caBundle``.

Every review gets an answer, never a hang: a handler slower than ``timeout`` (10 s, the API
server's default ``timeoutSeconds``; keep it below the configuration's) is answered
``allowed: false`` code 504; a handler that raises is answered code 500 with its message and
logged with its traceback; a body that is no review is answered HTTP 400. The manager's
``/readyz`` has a ``webhook`` check that fails until the listener accepts connections
(controller-runtime's ``StartedChecker``).

Metrics are controller-runtime's: ``controller_runtime_webhook_requests_total{webhook,code}``
(``code``: the HTTP status), ``controller_runtime_webhook_latency_seconds{webhook}`` and
``controller_runtime_webhook_requests_in_flight{webhook}``, ``webhook`` being the path.

The listener is kubetrio's h11-on-trio server (``kubetrio.runtime.http``), as the metrics
endpoints', not an ASGI server: it speaks TLS with reloadable certificates and is cancelled with
the manager's nursery; an admission review is one small POST, which needs nothing more.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import msgspec
import trio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubetrio.runtime.certs.serving import ServingPair, self_signed, server_context
from kubetrio.runtime.certs.watcher import DEFAULT_POLL_INTERVAL, CertWatcher
from kubetrio.runtime.http.listen import Listening, open_listeners, parse_bind_address
from kubetrio.runtime.http.messages import JSON, Request, Response
from kubetrio.runtime.http.server import TEXT, HttpServer
from kubetrio.runtime.util.log import get_logger
from kubetrio.runtime.webhook.admission import BadObject, Denied, denied, errored
from kubetrio.runtime.webhook.conversion import Converter, Converters, failed
from kubetrio.runtime.webhook.review import (
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    ConversionReview,
    ConversionReviewSent,
)

__all__ = ["DEFAULT_BIND_ADDRESS", "DEFAULT_TIMEOUT", "AdmissionHandler", "WebhookServer"]

log = get_logger("kubetrio.webhook")

DEFAULT_BIND_ADDRESS: Final = ":9443"
DEFAULT_TIMEOUT: Final = 10.0
CONVERT_PATH: Final = "/convert"
# kube-apiserver sends objects up to 3 MiB, twice in an update; controller-runtime reads 7 MiB.
MAX_BODY: Final = 7 * 1024 * 1024

AdmissionHandler = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]


class _Metrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["webhook", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            registry=registry,
        )
        self.in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=registry,
        )


class WebhookServer:
    """Serves the registered admission handlers and converters (see the module's text)."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        bind_address: str = DEFAULT_BIND_ADDRESS,
        cert_dir: Path | None = None,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        timeout: float = DEFAULT_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.registry = registry
        self.bind_address = bind_address
        self.timeout = timeout
        self.idle_timeout = 120.0
        self.watcher = (
            CertWatcher(
                cert_dir / cert_name,
                cert_dir / key_name,
                registry=registry,
                interval=poll_interval,
            )
            if cert_dir is not None
            else None
        )
        self.self_signed: ServingPair | None = None
        self._context: ssl.SSLContext | None = None
        self.converters = Converters()
        self._admission: dict[str, AdmissionHandler] = {}
        self._metrics: _Metrics | None = None  # made with the first webhook
        self.listening: Listening | None = None

    def __bool__(self) -> bool:
        """True once a webhook is registered: only then does the server run."""
        return bool(self._admission) or bool(self.converters)

    @property
    def paths(self) -> list[str]:
        return sorted([*self._admission, *([CONVERT_PATH] if self.converters else [])])

    @property
    def ca_pem(self) -> bytes | None:
        """The self-signed CA (PEM) to trust, once ``load``ed without certificate files."""
        return self.self_signed.ca_pem if self.self_signed is not None else None

    def register(self, path: str, handler: AdmissionHandler) -> None:
        if path in self._admission or path == CONVERT_PATH:
            raise ValueError(f"webhook path {path} is already registered")
        self._metrics_ready()
        self._admission[path] = handler

    def register_converter(self, group: str, kind: str, converter: Converter) -> None:
        self.converters.register(group, kind, converter)
        self._metrics_ready()

    def _metrics_ready(self) -> _Metrics:
        if self._metrics is None:
            self._metrics = _Metrics(self.registry)
        return self._metrics

    def started_check(self) -> str | None:
        """``/readyz``'s ``webhook`` check: fails until the listener accepts connections."""
        if self.listening is not None or parse_bind_address(self.bind_address) is None:
            return None  # listening, or turned off on purpose
        return "webhook server is not listening yet"

    # -- serving --------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return bool(self) and parse_bind_address(self.bind_address) is not None

    async def load(self) -> None:
        """Load or make the certificate; ``CertificateError`` naming the files on failure."""
        if self.watcher is not None:
            self.watcher.read()
            return
        self.self_signed = await trio.to_thread.run_sync(self_signed)
        self._context = server_context(self.self_signed)

    def ssl_context(self) -> ssl.SSLContext:
        if self.watcher is not None:
            return self.watcher.context
        assert self._context is not None, "WebhookServer.load has not run"
        return self._context

    async def serve(self, *, task_status: trio.TaskStatus[Listening | None]) -> None:
        """Listen and serve until cancelled (``load`` first); reports the ``Listening``."""
        address = parse_bind_address(self.bind_address)
        if address is None or not self:
            task_status.started(None)
            return
        listeners, addresses = await open_listeners(address, "webhooks")
        bound = Listening(addresses)
        log.info("serving webhooks", addresses=[f"{h}:{p}" for h, p in bound.addresses],
                 paths=self.paths)  # fmt: skip
        try:
            async with trio.open_nursery() as nursery:
                if self.watcher is not None:
                    nursery.start_soon(self.watcher.run)
                server = HttpServer(
                    self._respond,
                    max_body=MAX_BODY,
                    idle_timeout=self.idle_timeout,
                    tls=self.ssl_context,
                )
                nursery.start_soon(trio.serve_listeners, server.serve_connection, listeners)
                self.listening = bound
                task_status.started(bound)
        finally:
            self.listening = None
            for listener in listeners:
                await trio.aclose_forcefully(listener)

    async def _respond(self, request: Request) -> Response:
        path = request.path
        admission = self._admission.get(path)
        if admission is None and not (path == CONVERT_PATH and self.converters):
            return _plain(404, "404 page not found\n")
        metrics = self._metrics_ready()
        metrics.in_flight.labels(path).inc()
        start = trio.current_time()
        try:
            response = await self._review(request, admission)
        finally:
            metrics.in_flight.labels(path).dec()
        metrics.latency.labels(path).observe(trio.current_time() - start)
        metrics.requests.labels(path, str(response.status)).inc()
        return response

    async def _review(self, request: Request, admission: AdmissionHandler | None) -> Response:
        if request.method != "POST":
            response = _plain(405, "method not allowed\n")
            response.headers.append(("Allow", "POST"))
            return response
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type != "application/json":
            return _plain(400, f"contentType={content_type}, expected application/json\n")
        if admission is not None:
            return await self._admit(request, admission)
        return await self._convert(request)

    async def _admit(self, request: Request, handler: AdmissionHandler) -> Response:
        try:
            review = msgspec.json.decode(request.body, type=AdmissionReview)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            return _review_json(400, AdmissionReview(response=errored("", 400, str(error))))
        if review.request is None or review.api_version != "admission.k8s.io/v1":
            message = (
                f"apiVersion {review.api_version!r}: only admission.k8s.io/v1 is served"
                if review.request is not None
                else "request: required, got none"
            )
            return _review_json(400, AdmissionReview(response=errored("", 400, message)))
        admission = review.request
        answer: AdmissionResponse | None = None
        with trio.move_on_after(self.timeout):
            try:
                answer = await handler(admission)
            except Denied as refusal:
                answer = denied(admission.uid, refusal)
            except BadObject as error:
                answer = errored(admission.uid, 400, str(error))
            except Exception as error:
                log.exception(
                    "webhook handler failed", path=request.path, kind=admission.kind.kind,
                    name=admission.name, namespace=admission.namespace,
                )  # fmt: skip
                answer = errored(admission.uid, 500, str(error) or type(error).__name__)
        if answer is None:
            log.warning("webhook handler timed out", path=request.path, seconds=self.timeout)
            answer = errored(
                admission.uid, 504, f"webhook handler did not answer within {self.timeout:g}s"
            )
        return _review_json(200, AdmissionReview(response=answer))

    async def _convert(self, request: Request) -> Response:
        try:
            review = msgspec.json.decode(request.body, type=ConversionReviewSent)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            return _review_json(400, ConversionReview(response=failed("", str(error))))
        if review.request is None or review.api_version != "apiextensions.k8s.io/v1":
            message = (
                f"apiVersion {review.api_version!r}: only apiextensions.k8s.io/v1 is served"
                if review.request is not None
                else "request: required, got none"
            )
            return _review_json(400, ConversionReview(response=failed("", message)))
        conversion = review.request
        answer = failed(
            conversion.uid, f"conversion webhook did not answer within {self.timeout:g}s"
        )
        with trio.move_on_after(self.timeout):
            try:
                answer = await self.converters.handle(conversion)
            except Exception as error:
                log.exception("conversion webhook failed", desired=conversion.desired_api_version)
                answer = failed(conversion.uid, str(error) or type(error).__name__)
        return _review_json(200, ConversionReview(response=answer))


def _plain(status: int, text: str) -> Response:
    return Response(status, text.encode(), TEXT)


def _review_json(status: int, review: AdmissionReview | ConversionReview) -> Response:
    return Response(status, msgspec.json.encode(review), JSON)
