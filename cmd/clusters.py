"""MCM's two clusters from the configuration: which API server is the control cluster, which the
target cluster, and a client for each.

MCM keeps Machines, MachineClasses and their Secrets in the control cluster
(``--control-kubeconfig``) and works on the Nodes they join in the target cluster
(``--target-kubeconfig``). One kubeconfig for both stays the default, and then one client and
one cache serve both roles. The rules:

* target: ``target.kubeconfig`` (with ``target.context``), else the top-level kubeconfig,
  context and master (``target.context`` replacing the context);
* control: ``control.kubeconfig`` (``"inClusterConfig"``: the pod's service account, as MCM),
  else the top-level one; when only the target names a kubeconfig (no top-level kubeconfig,
  context or master), the control cluster is the target cluster (MCM: "default value is same
  as target-kubeconfig");
* the two are one cluster when they resolve to the same kubeconfig, context and master;
* each client has its own rate limiter: ``control.qps``/``burst`` and ``target.qps``/``burst``,
  else ``client.qps``/``burst`` (MCM gives each of its clients ``--kube-api-qps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio
from prometheus_client import CollectorRegistry

from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.loading import load_client
from kubetrio.runtime.client.typed import Client

if TYPE_CHECKING:
    from kubetrio.cmd.config import ManagerConfig

__all__ = [
    "IN_CLUSTER",
    "Endpoint",
    "TargetClusterError",
    "check_target",
    "client_for",
    "cluster_clients",
    "clusters_are_one",
    "control_endpoint",
    "embedded_conflict",
    "kubeconfig_problem",
    "target_endpoint",
]

IN_CLUSTER: Final = "inClusterConfig"
NO_TARGET: Final = "none"  # MCM's "no target cluster"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a cluster's API server is found: a kubeconfig (None: the default loading rules),
    a context in it, or a URL overriding the kubeconfig's server."""

    kubeconfig: str | None = None
    context: str | None = None
    master: str | None = None


def _top(config: ManagerConfig) -> Endpoint:
    return Endpoint(config.kubeconfig, config.context, config.master)


def target_endpoint(config: ManagerConfig) -> Endpoint:
    own = config.target
    if own.kubeconfig is not None:
        return Endpoint(own.kubeconfig, own.context)
    top = _top(config)
    return Endpoint(top.kubeconfig, own.context or top.context, top.master)


def control_endpoint(config: ManagerConfig) -> Endpoint:
    own = config.control
    if own.kubeconfig is not None:
        return Endpoint(own.kubeconfig, own.context)
    top = _top(config)
    if top == Endpoint() and config.target.kubeconfig is not None:
        target = target_endpoint(config)
        return Endpoint(target.kubeconfig, own.context or target.context)
    return Endpoint(top.kubeconfig, own.context or top.context, top.master)


def clusters_are_one(config: ManagerConfig) -> bool:
    return control_endpoint(config) == target_endpoint(config)


def kubeconfig_problem(role: str, path: str | None) -> str | None:
    """Why ``role``'s kubeconfig cannot be used, said before anything starts; None if it can."""
    if path is None or (role == "control" and path == IN_CLUSTER):
        return None
    if role == "target" and path == NO_TARGET:
        return (
            f'"{NO_TARGET}" (no target cluster) is not supported: the machine controller drains '
            "and deletes the Nodes of its machines"
        )
    if not Path(path).expanduser().is_file():
        return f'kubeconfig file "{path}" does not exist'
    return None


def embedded_conflict(config: ManagerConfig) -> str | None:
    """The embedded cluster is one cluster: a separate control or target cannot go with it."""
    given = (config.control.kubeconfig, config.control.context)
    if all(value is None for value in (*given, config.target.kubeconfig, config.target.context)):
        return None
    return (
        "--control-kubeconfig, --target-kubeconfig and their contexts: not with --embedded "
        "(the embedded cluster is both the control and the target cluster)"
    )


def client_for(
    endpoint: Endpoint,
    *,
    qps: float,
    burst: int,
    timeout: float,
    registry: CollectorRegistry | None = None,
    component: str = "kubetrio",
) -> Client:
    """``registry``: where its ``rest_client_*`` metrics go (labelled by host, so two clusters'
    clients stay apart); ``component``: what ends its User-Agent (the manager's identity)."""
    options: dict[str, Any] = {
        "qps": qps,
        "burst": burst,
        "timeout": timeout,
        "registry": registry,
        "component": component,
    }
    if endpoint.kubeconfig == IN_CLUSTER:
        return Client.in_cluster(**options)
    return load_client(endpoint.kubeconfig, endpoint.context, endpoint.master, **options)


def cluster_clients(
    config: ManagerConfig, registry: CollectorRegistry | None = None, component: str = "kubetrio"
) -> tuple[Client, Client | None]:
    """The control cluster's client, and the target cluster's (None when they are one)."""
    client = config.client
    control = client_for(
        control_endpoint(config),
        qps=config.control.qps or client.qps,
        burst=config.control.burst or client.burst,
        timeout=client.timeout,
        registry=registry,
        component=component,
    )
    if clusters_are_one(config):
        return control, None
    target = client_for(
        target_endpoint(config),
        qps=config.target.qps or client.qps,
        burst=config.target.burst or client.burst,
        timeout=client.timeout,
        registry=registry,
        component=component,
    )
    return control, target


class TargetClusterError(Exception):
    """The target cluster's API server cannot be used; ``str`` is one line naming it."""


async def check_target(client: Client, within: float) -> None:
    """Ask the target cluster's API server for its version, as the control cluster's is asked:
    unreachable or refused is one clear error before anything starts."""
    try:
        with trio.fail_after(within):
            await client.request("GET", "/version")
    except trio.TooSlowError:
        raise TargetClusterError(
            f"target cluster: the API server at {client.host} did not answer within {within:g}s"
        ) from None
    except ApiError as error:
        raise TargetClusterError(f"target cluster: {error}") from None
