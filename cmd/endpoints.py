"""The manager's HTTP endpoints as ``kubetrio run`` sets them up: secure metrics from the
configuration, and the embedded demo's free local ports, announced once bound.

The demo must never collide with another manager (or a second demo) on controller-runtime's
fixed ports, and must not offer its metrics to the whole network: addresses the user did not
give become ``127.0.0.1:0``, and the ports the kernel picked are printed.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from kubetrio.cmd.config import ManagerConfig
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.secure import SecureServing

__all__ = ["announce_endpoints", "local_free_ports", "secure_serving"]

LOCAL_FREE_PORT = "127.0.0.1:0"


def secure_serving(config: ManagerConfig) -> SecureServing | None:
    """``--metrics-secure`` and its certificate flags, for the Manager (None: plain HTTP)."""
    if not config.metrics_secure:
        return None
    cert_dir = Path(config.metrics_cert_path) if config.metrics_cert_path is not None else None
    return SecureServing(cert_dir, config.metrics_cert_name, config.metrics_cert_key)


def local_free_ports(config: ManagerConfig) -> ManagerConfig:
    """``config`` with a free local port wherever a bind address was not given."""
    metrics, probes = config.metrics_bind_address, config.health_probe_bind_address
    return msgspec.structs.replace(
        config,
        metrics_bind_address=LOCAL_FREE_PORT if metrics is None else metrics,
        health_probe_bind_address=LOCAL_FREE_PORT if probes is None else probes,
    )


async def announce_endpoints(manager: Manager) -> None:
    """Print where metrics and probes answer, once the manager listens."""
    await manager.serving.wait()
    scheme = "https" if manager.secure_metrics is not None else "http"
    if (port := manager.bound_ports.get("metrics")) is not None:
        line = f"metrics: {scheme}://127.0.0.1:{port}/metrics"
        if manager.secure_metrics is not None:
            line += " (a bearer token allowed to get /metrics, e.g. the kubeconfig's)"
        print(line, flush=True)
    if (port := manager.bound_ports.get("probes")) is not None:
        print(f"probes: http://127.0.0.1:{port}/healthz and /readyz", flush=True)
