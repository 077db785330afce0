"""What ``kubetrio run`` can be configured with, and how each setting is spelled outside a file.

Every setting is a flag and a ``KUBETRIO_*`` environment variable named after it, landing on one
field of ``ManagerConfig``. The table states only the names and the help: how text is parsed
comes from the field's declared type, and the default from the field's definition (for the
controllers' own sections, in their packages), so neither can drift from the config file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from kubetrio.cmd.config.errors import dotted
from kubetrio.cmd.config.sections import type_at
from kubetrio.runtime.util.duration import Duration

__all__ = ["CONFIG_FLAG", "OPTIONAL_STRINGS", "SETTINGS", "Kind", "Setting", "env_var", "kind_of"]

Kind = Literal["str", "bool", "int", "float", "duration", "list", "workers"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One configurable value: its flag, the file path it lands on, and its help text."""

    flag: str
    path: tuple[str, ...]  # file field names, e.g. ("leaderElection", "leaseDuration")
    help: str

    @property
    def kind(self) -> Kind:
        return kind_of(self.path)

    @property
    def env(self) -> str:
        return env_var(self.flag)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def env_var(flag: str) -> str:
    """``--leader-elect`` → ``KUBETRIO_LEADER_ELECT``."""
    return "KUBETRIO_" + flag.lstrip("-").replace("-", "_").upper()


@functools.cache
def kind_of(path: tuple[str, ...]) -> Kind:
    """How text for the field at ``path`` is parsed, read off the field's declared type."""
    declared = type_at(path)
    if isinstance(declared, msgspec.inspect.UnionType):  # an optional value: what it is when set
        declared = next(
            (t for t in declared.types if not isinstance(t, msgspec.inspect.NoneType)), None
        )
    if isinstance(declared, msgspec.inspect.CustomType) and declared.cls is Duration:
        return "duration"
    for inspected, kind in _KINDS:
        if isinstance(declared, inspected):
            return kind
    raise TypeError(f"{dotted(path)}: no command-line form for {declared!r}")


_KINDS: Final[tuple[tuple[type[msgspec.inspect.Type], Kind], ...]] = (
    (msgspec.inspect.BoolType, "bool"),
    (msgspec.inspect.IntType, "int"),
    (msgspec.inspect.FloatType, "float"),
    (msgspec.inspect.StrType, "str"),
    (msgspec.inspect.LiteralType, "str"),
    (msgspec.inspect.VarTupleType, "list"),
    (msgspec.inspect.DictType, "workers"),  # NAME=N items
)


def _s(flag: str, path: str, help: str) -> Setting:
    return Setting(flag, tuple(path.split(".")), help)


SETTINGS: Final[tuple[Setting, ...]] = (
    _s(
        "--kubeconfig",
        "kubeconfig",
        (
            "kubeconfig file (default: $KUBECONFIG, else the in-cluster config in a pod, else "
            "~/.kube/config)"
        ),
    ),
    _s("--context", "context", "kubeconfig context to use"),
    _s("--master", "master", "API server URL, overriding the kubeconfig's"),
    _s("--controllers", "controllers", "controllers to run, comma-separated"),
    _s(
        "--metrics-bind-address",
        "metricsBindAddress",
        'host:port for /metrics, ":port" on every interface; "0" off '
        '(default ":8080", ":8443" with --metrics-secure)',
    ),
    _s(
        "--health-probe-bind-address",
        "healthProbeBindAddress",
        'host:port for /healthz and /readyz; "0" off (default ":8081")',
    ),
    _s(
        "--metrics-secure",
        "metricsSecure",
        "serve /metrics over HTTPS, only to readers the API server authenticates (TokenReview) "
        "and authorizes (SubjectAccessReview of get on /metrics)",
    ),
    _s(
        "--metrics-cert-path",
        "metricsCertPath",
        "folder of the metrics server's certificate and key, reloaded when they change "
        "(default: a self-signed certificate)",
    ),
    _s("--metrics-cert-name", "metricsCertName", "certificate file in --metrics-cert-path"),
    _s("--metrics-cert-key", "metricsCertKey", "key file in --metrics-cert-path"),
    _s(
        "--webhook-bind-address",
        "webhookBindAddress",
        'host:port of the webhook server (HTTPS), if webhooks are registered; "0" off',
    ),
    _s(
        "--webhook-cert-path",
        "webhookCertPath",
        "folder of the webhook server's tls.crt and tls.key, reloaded when they change "
        "(default: a self-signed certificate)",
    ),
    _s(
        "--webhooks",
        "webhooks",
        "serve the enabled controllers' admission webhooks (kubetrio webhooks manifest)",
    ),
    _s("--leader-elect", "leaderElection.enabled", "elect a leader before running"),
    _s(
        "--leader-election-namespace",
        "leaderElection.namespace",
        "namespace of the Lease (default: the pod's namespace in a cluster, else kube-system)",
    ),
    _s("--leader-election-id", "leaderElection.name", "name of the Lease"),
    _s("--leader-elect-lease-duration", "leaderElection.leaseDuration", "lease term"),
    _s(
        "--leader-elect-renew-deadline",
        "leaderElection.renewDeadline",
        "how long the leader keeps retrying to renew before giving up",
    ),
    _s(
        "--leader-elect-retry-period",
        "leaderElection.retryPeriod",
        "wait between attempts to acquire or renew",
    ),
    _s(
        "--leader-elect-release-on-cancel",
        "leaderElection.releaseOnCancel",
        "release the Lease on shutdown",
    ),
    _s(
        "--sharding",
        "sharding.enabled",
        "spread the machine, machineset and machinedeployment controllers' objects over every "
        "replica (needs --leader-elect: the singletons and the sharder stay on the leader)",
    ),
    _s("--sharding-ring", "sharding.ring", "name of the ring (part of the shard label's key)"),
    _s(
        "--sharding-namespace",
        "sharding.namespace",
        "namespace of the shard Leases (default: the leader election's namespace)",
    ),
    _s("--shard-id", "sharding.shardId", "this replica's shard id (default: the host name)"),
    _s("--shard-lease-duration", "sharding.leaseDuration", "shard Lease term"),
    _s(
        "--shard-renew-deadline",
        "sharding.renewDeadline",
        "how long a shard keeps retrying to renew before it stops",
    ),
    _s("--shard-retry-period", "sharding.retryPeriod", "wait between shard Lease renewals"),
    _s(
        "--sharding-sync-period",
        "sharding.syncPeriod",
        "how often the sharder checks every object's assignment besides following changes",
    ),
    _s(
        "--run-sharder",
        "sharding.runSharder",
        "run the sharder on the leader (false: a separate kubetrio sharder runs it)",
    ),
    _s(
        "--sharding-concurrent-moves",
        "sharding.concurrentMoves",
        "labels the sharder writes at once",
    ),
    _s(
        "--sharding-webhook",
        "sharding.webhook",
        "serve the admission webhook assigning new objects to shards (kubetrio manifests "
        "configures it)",
    ),
    _s(
        "--graceful-shutdown-timeout",
        "gracefulShutdownTimeout",
        "how long in-flight work may take to finish on shutdown",
    ),
    _s(
        "--gc",
        "gc",
        "garbage collector: tuned (freeze the synced caches out of collections, young "
        "generation 10000) or default (CPython's)",
    ),
    _s("--log-format", "logging.format", "text or json"),
    _s("--log-level", "logging.level", "debug, info, warning or error"),
    _s("--kube-api-qps", "client.qps", "client-side QPS limit towards the API server"),
    _s("--kube-api-burst", "client.burst", "client-side burst towards the API server"),
    _s("--kube-api-timeout", "client.timeout", "timeout of one API request"),
    _s(
        "--control-kubeconfig",
        "control.kubeconfig",
        "the control cluster's kubeconfig (Machines, MachineClasses, their Secrets); "
        '"inClusterConfig" for the pod\'s own; default: --kubeconfig, else --target-kubeconfig',
    ),
    _s(
        "--target-kubeconfig",
        "target.kubeconfig",
        "the target cluster's kubeconfig (the Nodes machines join); default: --kubeconfig",
    ),
    _s("--control-context", "control.context", "kubeconfig context of the control cluster"),
    _s("--target-context", "target.context", "kubeconfig context of the target cluster"),
    _s("--control-kube-api-qps", "control.qps", "QPS towards the control cluster"),
    _s("--control-kube-api-burst", "control.burst", "burst towards the control cluster"),
    _s("--target-kube-api-qps", "target.qps", "QPS towards the target cluster"),
    _s("--target-kube-api-burst", "target.burst", "burst towards the target cluster"),
    _s("--workers", "workers", "worker count per controller, NAME=N (repeatable)"),
    _s("--machine-workers", "workers.machine", "workers of the machine controller"),
    _s("--node-delete-workers", "workers.nodedelete", "workers of the nodedelete controller"),
    _s("--storage-gc-workers", "workers.storagegc", "workers of the storagegc controller"),
    _s("--machine-namespace", "machine.namespace", "namespace the Machines live in"),
    _s("--namespace", "machine.namespace", "MCM's name for --machine-namespace"),
    _s(
        "--machine-creation-timeout",
        "machine.creationTimeout",
        "how long a Machine may take to join",
    ),
    _s(
        "--machine-health-timeout",
        "machine.healthTimeout",
        "how long a Machine may be unhealthy before it is replaced",
    ),
    _s("--machine-drain-timeout", "machine.drainTimeout", "drain time limit"),
    _s(
        "--machine-preserve-timeout",
        "machine.machinePreserveTimeout",
        "how long a preserved Machine (node.machine.sapcloud.io/preserve) is kept",
    ),
    _s(
        "--machine-inplace-update-timeout",
        "machine.inPlaceUpdateTimeout",
        "how long an in-place update may take before the Machine is InPlaceUpdateFailed",
    ),
    _s(
        "--resource-exhausted-retry",
        "machine.resourceExhaustedRetry",
        "when to retry a creation the provider refused as ResourceExhausted (out of capacity)",
    ),
    _s(
        "--machine-max-evict-retries",
        "machine.maxEvictRetries",
        "eviction attempts per pod during a drain",
    ),
    _s(
        "--machine-pv-detach-timeout",
        "machine.pvDetachTimeout",
        "wait for volumes to detach during a drain",
    ),
    _s(
        "--machine-pv-reattach-timeout",
        "machine.pvReattachTimeout",
        "wait for volumes to reattach elsewhere during a drain",
    ),
    _s(
        "--autoscaler-scaledown-annotation-during-rollout",
        "machine.autoscalerScaleDownAnnotationDuringRollout",
        "annotate a deployment's nodes cluster-autoscaler.kubernetes.io/scale-down-disabled "
        "while it rolls out",
    ),
    _s(
        "--metrics-per-machine",
        "machine.metricsPerMachine",
        "export the per-machine mcm_machine_* series (false: only the count; for large pools)",
    ),
    _s(
        "--node-conditions",
        "machine.nodeConditions",
        "node conditions that make a Machine unhealthy, comma-separated",
    ),
    _s(
        "--machine-safety-orphan-vms-period",
        "machine.safetyOrphanVMsPeriod",
        "period of the orphan-VM sweep",
    ),
    _s(
        "--machine-safety-apiserver-statuscheck-period",
        "machine.safetyAPIServerStatusCheckPeriod",
        "how often the safety controller checks that the API server answers",
    ),
    _s(
        "--machine-safety-apiserver-statuscheck-timeout",
        "machine.safetyAPIServerStatusCheckTimeout",
        "how long the API server may be unreachable before the machine controller freezes",
    ),
    _s(
        "--safety-up",
        "machine.safetyUp",
        "machines a MachineSet may have beyond its limit (desired, or deployment replicas + "
        "maxSurge) before it is frozen",
    ),
    _s(
        "--safety-down",
        "machine.safetyDown",
        "how far below the freeze limit a frozen MachineSet must fall to be unfrozen",
    ),
    _s(
        "--machine-safety-overshooting-period",
        "machine.safetyOvershootingPeriod",
        "how often MachineSets are checked for too many machines",
    ),
    _s(
        "--sim-cloud-url",
        "machine.simCloudURL",
        "URL of the simulated cloud the sim machine driver calls (a MachineClass secret's "
        "simCloudURL overrides it)",
    ),
    _s("--csi-driver", "storage.csiDriver", "CSI driver name of the storage backend"),
    _s("--storage-backend-url", "storage.backendURL", "URL of the storage backend API"),
    _s(
        "--storage-delete-timeout",
        "storage.deleteTimeout",
        "time limit of one storage-node delete (or list) call to the backend",
    ),
    _s(
        "--node-delete-gc-delay",
        "storage.gcDelay",
        "wait after start before the first storage GC (0 means StorageOS's 10s)",
    ),
    _s(
        "--node-delete-gc-interval",
        "storage.gcInterval",
        "period of the storage GC; 0 disables it",
    ),
)

CONFIG_FLAG: Final = "--config"
# Optional strings whose empty value means "not set" (an empty KUBETRIO_MASTER= is no URL).
OPTIONAL_STRINGS: Final = frozenset(
    {
        ("kubeconfig",),
        ("context",),
        ("master",),
        ("metricsCertPath",),
        ("leaderElection", "namespace"),
        ("sharding", "namespace"),
        ("sharding", "shardId"),
        ("storage", "backendURL"),
        ("machine", "simCloudURL"),
        *((role, field) for role in ("control", "target") for field in ("kubeconfig", "context")),
    }
)
