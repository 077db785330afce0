"""The Manager a command runs, built from the configuration the same way by ``kubetrio run`` and
``kubetrio sharder``: its endpoints, its shutdown, GC and allocator settings, and its leader
election."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.endpoints import secure_serving
from kubetrio.runtime.client.incluster import pod_namespace
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions
from kubetrio.runtime.manager.allocator import HeapTrimmer
from kubetrio.runtime.manager.manager import Manager

# Where the Lease goes when neither the configuration nor a pod's mount names a namespace.
OUTSIDE_A_POD_LEASE_NAMESPACE = "kube-system"


def lease_namespace(config: ManagerConfig) -> str:
    """The configured namespace, else the pod's (as controller-runtime's), else kube-system."""
    return config.leader_election.namespace or pod_namespace() or OUTSIDE_A_POD_LEASE_NAMESPACE


def new_manager(
    config: ManagerConfig,
    client: Client,
    metrics: CollectorRegistry,
    identity: str,
    *,
    lease_name: str,
    elect: bool,
    **options: Any,
) -> Manager:
    """A Manager serving ``config``'s endpoints; leader-elected on ``lease_name`` when
    ``elect``; ``options`` are the Manager's other keyword arguments."""
    election = config.leader_election
    manager = Manager(
        client,
        registry=metrics,
        metrics_bind_address=config.metrics_bind_address,
        health_probe_bind_address=config.health_probe_bind_address,
        metrics_secure=secure_serving(config),
        webhook_bind_address=config.webhook_bind_address,
        webhook_cert_path=Path(config.webhook_cert_path) if config.webhook_cert_path else None,
        graceful_shutdown_timeout=config.graceful_shutdown_timeout,
        gc=config.gc,
        leader_election=LeaderElectionOptions(
            namespace=lease_namespace(config),
            name=lease_name,
            identity=identity,
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
            release_on_cancel=election.release_on_cancel,
        )
        if elect
        else None,
        **options,
    )
    # A manager process lives long: hand glibc's free heap pages back, so churn leaves no steps.
    manager.add(HeapTrimmer())
    return manager
