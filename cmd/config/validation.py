"""Checks that span fields or need more than a type: known controllers, bind addresses and
URLs, leader-election timing, DNS names, positive durations, the two clusters."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Collection
from typing import Final
from urllib.parse import urlsplit

from kubetrio.cmd.clusters import clusters_are_one, kubeconfig_problem
from kubetrio.cmd.config.errors import show
from kubetrio.cmd.config.sections import ClusterConfig, ManagerConfig
from kubetrio.cmd.config.sources import Sources
from kubetrio.runtime.metrics.server import BindAddressError, parse_bind_address
from kubetrio.runtime.util.log import parse_level

__all__ = ["validate"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_SHARD_ID = re.compile(r"^(?=.{1,63}$)[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)

# Durations where zero makes no sense (a zero timeout would fail everything at once).
_POSITIVE_DURATIONS: Final[tuple[tuple[str, str], ...]] = (
    ("client", "timeout"),
    ("machine", "creationTimeout"),
    ("machine", "healthTimeout"),
    ("machine", "drainTimeout"),
    ("machine", "pvDetachTimeout"),
    ("machine", "pvReattachTimeout"),
    ("machine", "safetyOrphanVMsPeriod"),
    ("machine", "safetyAPIServerStatusCheckPeriod"),
    ("machine", "safetyAPIServerStatusCheckTimeout"),
    ("machine", "safetyOvershootingPeriod"),
    ("storage", "deleteTimeout"),
)


def validate(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    """Raise the first problem, naming the field and its source; ``known``: the controllers a
    registry can set up."""
    checks: list[Callable[[ManagerConfig, Sources, Collection[str]], None]] = [
        _check_controllers,
        _check_workers,
        _check_addresses,
        _check_metrics_tls,
        _check_logging,
        _check_leader_election,
        _check_sharding,
        _check_durations,
        _check_names,
        _check_finite,
        _check_clusters,
    ]
    for check in checks:
        check(config, sources, known)


def _check_controllers(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    if sources.is_default(["controllers"]):
        return  # the default set names the built-ins; the CLI enables those it has
    unknown = [name for name in config.controllers if name not in known]
    if unknown:
        raise sources.error(
            ["controllers"],
            f"unknown controller{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(show, unknown))}; known: {', '.join(sorted(known))}",
        )
    if len(set(config.controllers)) != len(config.controllers):
        twice = sorted({n for n in config.controllers if config.controllers.count(n) > 1})
        raise sources.error(["controllers"], f"listed more than once: {', '.join(twice)}")


def _check_workers(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    for name, count in config.workers.items():
        path = ["workers", name]
        if sources.is_default(path):
            continue  # built-in defaults name the built-in controllers, registered or not
        if name not in known:
            raise sources.error(
                path, f"unknown controller {show(name)}; known: {', '.join(sorted(known))}"
            )
        if count < 1:
            raise sources.error(path, f"expected at least 1 worker, got {count}")


def _check_addresses(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    for field in ("metricsBindAddress", "healthProbeBindAddress", "webhookBindAddress"):
        value = getattr(config, _attr(field))
        if value is None:
            continue  # the default
        try:
            parse_bind_address(value)
        except BindAddressError as exc:
            raise sources.error([field], str(exc)) from None
    for path, url in (
        (["storage", "backendURL"], config.storage.backend_url),
        (["machine", "simCloudURL"], config.machine.sim_cloud_url),
        (["master"], config.master),
    ):
        problem = None if url is None else _url_problem(url)
        if problem is not None:
            raise sources.error(path, problem)


def _check_metrics_tls(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    if config.metrics_cert_path is not None and not config.metrics_secure:
        raise sources.error(
            ["metricsCertPath"],
            "only with metricsSecure (the certificate serves /metrics over TLS)",
        )
    metrics, probes = config.metrics_bind_address, config.health_probe_bind_address
    if config.metrics_secure and metrics is not None and metrics == probes:
        address = parse_bind_address(metrics)
        if address is not None and address.port != 0:
            raise sources.error(
                ["healthProbeBindAddress"],
                f"{metrics} is also metricsBindAddress: with metricsSecure the probes stay plain "
                "HTTP on a port of their own",
            )


def _url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"expected an http(s) URL, got {show(url)}"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
    except ValueError:
        return f"invalid port in {show(url)}"
    return None


def _check_logging(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    try:
        parse_level(config.logging.level)
    except ValueError as exc:
        raise sources.error(["logging", "level"], str(exc).removeprefix("log level: ")) from None


def _check_leader_election(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    """client-go's rule: leaseDuration > renewDeadline > retryPeriod > 0."""
    le = config.leader_election
    ordered = [
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ]
    if le.retry_period <= 0:
        raise sources.error(["leaderElection", "retryPeriod"], "must be greater than 0")
    for (longer, long_value), (shorter, short_value) in itertools.pairwise(ordered):
        if long_value > short_value:
            continue
        # Blame the one the operator set (the shorter one when both were).
        if not sources.is_default(["leaderElection", shorter]):
            message = f"must be less than leaderElection.{longer} ({long_value}), got {short_value}"
            raise sources.error(["leaderElection", shorter], message)
        message = f"must be greater than leaderElection.{shorter} ({short_value}), got {long_value}"
        raise sources.error(["leaderElection", longer], message)


def _check_sharding(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    """The shard Lease's timing as the leader's, its names as label values; and sharding only
    with leader election, since the singletons and the sharder must run on one replica."""
    sharding = config.sharding
    if not sharding.enabled:
        return
    if not config.leader_election.enabled:
        raise sources.error(
            ["sharding", "enabled"],
            "needs leaderElection.enabled (--leader-elect): the singleton controllers and the "
            "sharder run on the leader, and without an election every replica would run them",
        )
    ordered = [
        ("leaseDuration", sharding.lease_duration),
        ("renewDeadline", sharding.renew_deadline),
        ("retryPeriod", sharding.retry_period),
    ]
    if sharding.retry_period <= 0:
        raise sources.error(["sharding", "retryPeriod"], "must be greater than 0")
    for (longer, long_value), (shorter, short_value) in itertools.pairwise(ordered):
        if long_value <= short_value:
            raise sources.error(
                ["sharding", shorter],
                f"must be less than sharding.{longer} ({long_value}), got {short_value}",
            )
    if sharding.sync_period <= 0:
        raise sources.error(["sharding", "syncPeriod"], "must be greater than 0")
    if not _LABEL_NAME.match(sharding.ring) or len(sharding.ring) > 63:
        raise sources.error(
            ["sharding", "ring"],
            f"expected 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter "
            f"or digit (it is part of a label key), got {show(sharding.ring)}",
        )
    if sharding.namespace is not None and not _DNS_LABEL.match(sharding.namespace):
        raise sources.error(
            ["sharding", "namespace"],
            'expected a lower-case DNS-1123 label like "kube-system", got '
            + show(sharding.namespace),
        )
    if sharding.shard_id is not None and not _SHARD_ID.match(sharding.shard_id):
        raise sources.error(
            ["sharding", "shardId"],
            "expected 1-63 lower-case letters, digits, '-' or '.', starting and ending with a "
            "letter or digit (it names a Lease and is a label value), got "
            + show(sharding.shard_id),
        )


def _check_durations(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    for section, field in _POSITIVE_DURATIONS:
        value = getattr(getattr(config, _attr(section)), _attr(field))
        if value <= 0:
            raise sources.error([section, field], f"must be greater than 0, got {value}")


def _check_names(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    for path, value, rule, pattern in (
        (["leaderElection", "namespace"], config.leader_election.namespace, "label", _DNS_LABEL),
        (["machine", "namespace"], config.machine.namespace, "label", _DNS_LABEL),
        (["leaderElection", "name"], config.leader_election.name, "subdomain", _DNS_SUBDOMAIN),
    ):
        if value is not None and not pattern.match(value):
            raise sources.error(
                path,
                f'expected a lower-case DNS-1123 {rule} like "kube-system", got {show(value)}',
            )


def _check_finite(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    """YAML's ``.inf`` and ``.nan`` are floats too; an infinite QPS is no limit at all."""
    if not math.isfinite(config.client.qps):
        raise sources.error(["client", "qps"], f"expected a finite number, got {config.client.qps}")


def _check_clusters(config: ManagerConfig, sources: Sources, known: Collection[str]) -> None:
    """Per-cluster settings: their kubeconfig files exist, and settings of a target cluster
    are not given when there is none (they would silently do nothing)."""
    for role in ("control", "target"):
        cluster: ClusterConfig = getattr(config, role)
        if cluster.qps is not None and not math.isfinite(cluster.qps):
            raise sources.error([role, "qps"], f"expected a finite number, got {cluster.qps}")
        problem = kubeconfig_problem(role, cluster.kubeconfig)
        if problem is not None:
            raise sources.error([role, "kubeconfig"], problem)
    if clusters_are_one(config):
        for field in ("qps", "burst"):
            if getattr(config.target, field) is not None:
                raise sources.error(
                    ["target", field],
                    "the target cluster is the control cluster here (no separate "
                    "target.kubeconfig or target.context): set client." + field,
                )


def _attr(name: str) -> str:
    """File name → attribute name (``safetyOrphanVMsPeriod`` → ``safety_orphan_vms_period``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z]+)", lambda m: "_" + m.group(1).lower(), name).lower()
