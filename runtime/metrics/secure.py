"""``--metrics-secure``: ``/metrics`` over TLS, for authenticated and authorized readers only.

What kubebuilder's scaffold sets up around controller-runtime's metrics server: the
certificate from ``--metrics-cert-path`` (``tls.crt`` and ``tls.key`` by default, reloaded when
they change: ``kubetrio.runtime.certs.watcher``) or, with no path, a self-signed one made at
start (``kubetrio.runtime.certs.serving``); every request to ``/metrics`` authenticated and
authorized by the API server (``kubetrio.runtime.metrics.auth``). The probes are not affected:
they stay plain HTTP on their own port, where the kubelet can reach them.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trio
from prometheus_client import CollectorRegistry

from kubetrio.runtime.certs.serving import ServingPair, self_signed, server_context
from kubetrio.runtime.certs.watcher import DEFAULT_POLL_INTERVAL, CertWatcher
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.metrics.auth import MetricsAuthorizer
from kubetrio.runtime.util.log import get_logger

__all__ = ["SecureMetrics", "SecureServing"]

log = get_logger("kubetrio.securemetrics")


@dataclass(frozen=True, slots=True)
class SecureServing:
    """Where the serving certificate comes from: ``cert_dir``/``cert_name`` and
    ``cert_dir``/``key_name`` (kubebuilder's ``--metrics-cert-path``, ``--metrics-cert-name``,
    ``--metrics-cert-key``), or a self-signed one when ``cert_dir`` is None."""

    cert_dir: Path | None = None
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    poll_interval: float = DEFAULT_POLL_INTERVAL
    watch: bool = True


class SecureMetrics:
    """The TLS context and the request filter of a secure metrics listener."""

    def __init__(
        self, options: SecureServing, client: Client, registry: CollectorRegistry | None = None
    ) -> None:
        self.options = options
        self.authorizer = MetricsAuthorizer(client)
        self.watcher = (
            CertWatcher(
                options.cert_dir / options.cert_name,
                options.cert_dir / options.key_name,
                registry=registry,
                interval=options.poll_interval,
                watch=options.watch,
            )
            if options.cert_dir is not None
            else None
        )
        self.self_signed: ServingPair | None = None  # its ca_pem lets a local client verify
        self._context: ssl.SSLContext | None = None
        self._loaded = False

    def ssl_context(self) -> ssl.SSLContext:
        """The context for the next connection: the last certificate loaded."""
        if self.watcher is not None:
            return self.watcher.context
        assert self._context is not None, "SecureMetrics.run has not started"
        return self._context

    async def check(self, method: str, path: str, authorization: str) -> tuple[int, str] | None:
        return await self.authorizer.check(method, path, authorization)

    async def load(self) -> None:
        """Load the certificate; ``CertificateError`` naming the files if it cannot serve."""
        if self.watcher is not None:
            self.watcher.read()
            self._loaded = True
            log.info(
                "serving metrics with a certificate from files", cert=str(self.watcher.cert_path)
            )
            return
        # Key generation takes a few milliseconds of CPU: off the event loop.
        self.self_signed = await trio.to_thread.run_sync(self_signed)
        self._context = server_context(self.self_signed)
        log.info("serving metrics with a self-signed certificate")

    async def run(self) -> None:
        """Keep a certificate from files current until cancelled (once ``load``ed: metrics
        turned off never load one)."""
        if self.watcher is not None and self._loaded:
            await self.watcher.run()
