"""The manager's configuration as one typed value: the manager's own sections, and the built-in
controllers' options (each defined, with its defaults, in its controller's package) as the
``machine`` and ``storage`` sections. The field names here are the config file's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.runtime.manager.gctuning import GcMode
from kubetrio.runtime.util.duration import Duration
from kubetrio.runtime.util.options import Name, Names, Options, PositiveFloat, PositiveInt

__all__ = [
    "DEFAULT_CONTROLLERS",
    "DEFAULT_WORKERS",
    "ClientConfig",
    "ClusterConfig",
    "LeaderElectionConfig",
    "LoggingConfig",
    "ManagerConfig",
    "ShardingConfig",
    "config_to_dict",
    "type_at",
]

DEFAULT_CONTROLLERS: Final[tuple[str, ...]] = (
    "machine",
    "machineset",
    "machinedeployment",
    "safety",
    "nodedelete",
    "storagegc",
)
# StorageOS runs --node-delete-workers=5; the storage GC is one periodic loop.
DEFAULT_WORKERS: Final[Mapping[str, int]] = {
    "machine": 5,
    "machineset": 5,
    "machinedeployment": 5,
    "nodedelete": 5,
    "storagegc": 1,
}


class LeaderElectionConfig(Options, kw_only=True, frozen=True):
    """client-go's defaults (15 s / 10 s / 2 s), as controller-runtime uses them."""

    enabled: bool = False
    # Unset: the pod's own namespace (its ServiceAccount mount says which), else kube-system,
    # as controller-runtime picks it in a cluster.
    namespace: Name | None = None
    name: Name = "kubetrio-leader"
    lease_duration: Duration = Duration(15)
    renew_deadline: Duration = Duration(10)
    retry_period: Duration = Duration(2)
    release_on_cancel: bool = True


class ShardingConfig(Options, kw_only=True, frozen=True):
    """Spreading the shardable built-in controllers' objects over every replica
    (``kubetrio.runtime.sharding``): each replica holds a shard Lease of its own, named by its
    shard id, in ``namespace`` and labelled with ``ring``. Off by default."""

    enabled: bool = False
    ring: Name = "kubetrio"
    # Unset: the leader election's namespace (the pod's own in a cluster, else kube-system).
    namespace: Name | None = None
    # Unset: the host name, which is a Deployment pod's name.
    shard_id: Name | None = None
    lease_duration: Duration = Duration(15)
    renew_deadline: Duration = Duration(10)
    retry_period: Duration = Duration(2)
    sync_period: Duration = Duration(300)
    # The sharder runs on the leader; false when `kubetrio sharder` runs it instead.
    run_sharder: bool = True
    concurrent_moves: PositiveInt = 100
    # Serve the webhook that assigns new objects at creation (`kubetrio manifests` configures it).
    webhook: bool = False


class LoggingConfig(Options, kw_only=True, frozen=True):
    format: Literal["text", "json"] = "text"
    level: str = "info"


class ClientConfig(Options, kw_only=True, frozen=True):
    """Client-side rate limit and request timeout towards the API server (client-go's QPS/burst)."""

    qps: PositiveFloat = 20.0
    burst: PositiveInt = 30
    timeout: Duration = Duration(30)


class ClusterConfig(Options, kw_only=True, frozen=True):
    """One of MCM's two clusters (``control``: Machines, MachineClasses, their Secrets and the
    leader Lease; ``target``: the Nodes the machines join and what runs on them). Unset fields
    fall back on the top-level ``kubeconfig``/``context`` and ``client``; ``cmd.clusters`` says
    how, and when the two are one cluster."""

    kubeconfig: str | None = None
    context: str | None = None
    qps: PositiveFloat | None = None
    burst: PositiveInt | None = None


class ManagerConfig(Options, kw_only=True, frozen=True):
    """Everything ``kubetrio run`` is configured with, as its config file spells it."""

    kubeconfig: str | None = None
    context: str | None = None
    master: str | None = None
    controllers: Names = DEFAULT_CONTROLLERS
    # Unset: controller-runtime's defaults, every interface: metrics on ":8080" (":8443" with
    # metricsSecure), probes on ":8081" (the Manager's defaults); the embedded demo takes free
    # ports on 127.0.0.1 instead.
    metrics_bind_address: str | None = None
    health_probe_bind_address: str | None = None
    metrics_secure: bool = False
    metrics_cert_path: str | None = None  # a folder; unset: a self-signed certificate
    metrics_cert_name: Name = "tls.crt"
    metrics_cert_key: Name = "tls.key"
    # Admission and conversion webhooks (served only when some are registered).
    webhook_bind_address: str = ":9443"
    webhook_cert_path: str | None = None  # a folder of tls.crt and tls.key; unset: self-signed
    # The built-in controllers' own admission webhooks (Machine, MachineClass, MachineSet,
    # MachineDeployment): off unless asked, as they need a webhook configuration pointing here.
    webhooks: bool = False
    leader_election: LeaderElectionConfig = msgspec.field(default_factory=LeaderElectionConfig)
    sharding: ShardingConfig = msgspec.field(default_factory=ShardingConfig)
    graceful_shutdown_timeout: Duration = Duration(30)
    # The collector policy (kubetrio.runtime.manager.gctuning); the default is the one measured
    # best.
    gc: GcMode = "tuned"
    logging: LoggingConfig = msgspec.field(default_factory=LoggingConfig)
    client: ClientConfig = msgspec.field(default_factory=ClientConfig)
    control: ClusterConfig = msgspec.field(default_factory=ClusterConfig)
    target: ClusterConfig = msgspec.field(default_factory=ClusterConfig)
    workers: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_WORKERS))
    machine: MachineOptions = msgspec.field(default_factory=MachineOptions)
    storage: StorageOptions = msgspec.field(default_factory=StorageOptions)

    def workers_for(self, controller: str) -> int:
        """Worker count for ``controller``; 1 for a controller the config does not mention."""
        return self.workers.get(controller, 1)


def config_to_dict(config: ManagerConfig) -> dict[str, Any]:
    """The config as a file would hold it: file names, Go durations, unset values left out."""
    data = msgspec.to_builtins(config, enc_hook=_go_duration)
    assert isinstance(data, dict)
    return _drop_none(data)


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: _plain(value) for key, value in data.items() if value is not None}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return _drop_none(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _go_duration(value: Any) -> Any:
    if isinstance(value, Duration):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def type_at(path: Sequence[str]) -> msgspec.inspect.Type | None:
    """The declared type at ``path`` (file names; a mapping's key stands for its values), or
    None where there is no such field."""
    current: msgspec.inspect.Type = msgspec.inspect.type_info(ManagerConfig)
    for part in path:
        if isinstance(current, msgspec.inspect.DictType):
            current = current.value_type
            continue
        if not isinstance(current, msgspec.inspect.StructType):
            return None
        field = next((f for f in current.fields if f.encode_name == part), None)
        if field is None:
            return None
        current = field.type
    return current
