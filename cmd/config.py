"""The manager's configuration: one typed value from defaults, a file, the environment and flags.

Precedence is flags > environment > file > defaults, per setting. Every setting has one flag; its
environment variable is ``KUBETRIO_`` plus the flag's name in upper snake case (``--leader-elect``
is ``KUBETRIO_LEADER_ELECT``), and ``KUBECONFIG`` is honoured below ``KUBETRIO_KUBECONFIG``.

Everything is validated before the manager starts, and a problem is reported as one line that
says where the bad value came from (file and field path, environment variable or flag), because
that is what the operator has to go and fix. The file is checked on its own first, so a file
error always names the file; values from the environment and flags are parsed by kind (integer,
duration, list, …) as they are read, and then the whole merged value is checked once more.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import math
import re
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import msgspec
import yaml

from kubetrio.cmd.argparser import format_default
from kubetrio.cmd.clusters import clusters_are_one, kubeconfig_problem
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.runtime.manager.gctuning import GcMode
from kubetrio.runtime.metrics.server import BindAddressError, parse_bind_address
from kubetrio.runtime.util.duration import Duration
from kubetrio.runtime.util.log import parse_level
from kubetrio.runtime.util.options import Name, Names, Options, PositiveFloat, PositiveInt

__all__ = [
    "DEFAULT_CONTROLLERS",
    "DEFAULT_WORKERS",
    "SETTINGS",
    "ClientConfig",
    "ClusterConfig",
    "ConfigError",
    "Duration",
    "LeaderElectionConfig",
    "LoggingConfig",
    "ManagerConfig",
    "Setting",
    "add_config_flags",
    "config_to_dict",
    "env_var",
    "load_config",
]


class ConfigError(Exception):
    """A configuration problem; ``str(error)`` is the single line to show the operator."""


# --- values in messages and conversion hooks ---------------------------------------------


def _show(value: object) -> str:
    """A value for an error message: strings in double quotes as the operator typed them."""
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return repr(value)


def _dec_hook(kind: type, value: Any) -> Any:
    if kind is Duration:
        return Duration.parse(value)
    raise NotImplementedError(kind)  # msgspec turns this into "unsupported type"


def _file_dec_hook(kind: type, value: Any) -> Any:
    """A file states durations as strings: a bare ``30`` could mean seconds or minutes (or a
    forgotten unit), and Go's config files reject it for the same reason."""
    if kind is Duration and not isinstance(value, str):
        raise ValueError(f'expected a duration string like "15s", got {_show(value)}')
    return _dec_hook(kind, value)


def _enc_hook(value: Any) -> Any:
    if isinstance(value, Duration):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


# --- the typed configuration ----------------------------------------------------------------

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
    data = msgspec.to_builtins(config, enc_hook=_enc_hook)
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


# --- settings: flag, environment variable and field path ------------------------------------

Kind = Literal["str", "bool", "int", "float", "duration", "list", "workers"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One configurable value: its flag, the file path it lands on, and how to parse text."""

    flag: str
    path: tuple[str, ...]  # file field names, e.g. ("leaderElection", "leaseDuration")
    kind: Kind
    help: str

    @property
    def env(self) -> str:
        return env_var(self.flag)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def env_var(flag: str) -> str:
    """``--leader-elect`` → ``KUBETRIO_LEADER_ELECT``."""
    return "KUBETRIO_" + flag.lstrip("-").replace("-", "_").upper()


def _s(flag: str, path: str, kind: Kind, help: str) -> Setting:
    return Setting(flag, tuple(path.split(".")), kind, help)


SETTINGS: Final[tuple[Setting, ...]] = (
    _s(
        "--kubeconfig",
        "kubeconfig",
        "str",
        (
            "kubeconfig file (default: $KUBECONFIG, else the in-cluster config in a pod, else "
            "~/.kube/config)"
        ),
    ),
    _s("--context", "context", "str", "kubeconfig context to use"),
    _s("--master", "master", "str", "API server URL, overriding the kubeconfig's"),
    _s("--controllers", "controllers", "list", "controllers to run, comma-separated"),
    _s(
        "--metrics-bind-address",
        "metricsBindAddress",
        "str",
        'host:port for /metrics, ":port" on every interface; "0" off '
        '(default ":8080", ":8443" with --metrics-secure)',
    ),
    _s(
        "--health-probe-bind-address",
        "healthProbeBindAddress",
        "str",
        'host:port for /healthz and /readyz; "0" off (default ":8081")',
    ),
    _s(
        "--metrics-secure",
        "metricsSecure",
        "bool",
        "serve /metrics over HTTPS, only to readers the API server authenticates (TokenReview) "
        "and authorizes (SubjectAccessReview of get on /metrics)",
    ),
    _s(
        "--metrics-cert-path",
        "metricsCertPath",
        "str",
        "folder of the metrics server's certificate and key, reloaded when they change "
        "(default: a self-signed certificate)",
    ),
    _s("--metrics-cert-name", "metricsCertName", "str", "certificate file in --metrics-cert-path"),
    _s("--metrics-cert-key", "metricsCertKey", "str", "key file in --metrics-cert-path"),
    _s(
        "--webhook-bind-address",
        "webhookBindAddress",
        "str",
        'host:port of the webhook server (HTTPS), if webhooks are registered; "0" off',
    ),
    _s(
        "--webhook-cert-path",
        "webhookCertPath",
        "str",
        "folder of the webhook server's tls.crt and tls.key, reloaded when they change "
        "(default: a self-signed certificate)",
    ),
    _s(
        "--webhooks",
        "webhooks",
        "bool",
        "serve the enabled controllers' admission webhooks (kubetrio webhooks manifest)",
    ),
    _s("--leader-elect", "leaderElection.enabled", "bool", "elect a leader before running"),
    _s(
        "--leader-election-namespace",
        "leaderElection.namespace",
        "str",
        "namespace of the Lease (default: the pod's namespace in a cluster, else kube-system)",
    ),
    _s("--leader-election-id", "leaderElection.name", "str", "name of the Lease"),
    _s("--leader-elect-lease-duration", "leaderElection.leaseDuration", "duration", "lease term"),
    _s(
        "--leader-elect-renew-deadline",
        "leaderElection.renewDeadline",
        "duration",
        "how long the leader keeps retrying to renew before giving up",
    ),
    _s(
        "--leader-elect-retry-period",
        "leaderElection.retryPeriod",
        "duration",
        "wait between attempts to acquire or renew",
    ),
    _s(
        "--leader-elect-release-on-cancel",
        "leaderElection.releaseOnCancel",
        "bool",
        "release the Lease on shutdown",
    ),
    _s(
        "--graceful-shutdown-timeout",
        "gracefulShutdownTimeout",
        "duration",
        "how long in-flight work may take to finish on shutdown",
    ),
    _s(
        "--gc",
        "gc",
        "str",
        "garbage collector: tuned (freeze the synced caches out of collections, young "
        "generation 10000) or default (CPython's)",
    ),
    _s("--log-format", "logging.format", "str", "text or json"),
    _s("--log-level", "logging.level", "str", "debug, info, warning or error"),
    _s("--kube-api-qps", "client.qps", "float", "client-side QPS limit towards the API server"),
    _s("--kube-api-burst", "client.burst", "int", "client-side burst towards the API server"),
    _s("--kube-api-timeout", "client.timeout", "duration", "timeout of one API request"),
    _s(
        "--control-kubeconfig",
        "control.kubeconfig",
        "str",
        "the control cluster's kubeconfig (Machines, MachineClasses, their Secrets); "
        '"inClusterConfig" for the pod\'s own; default: --kubeconfig, else --target-kubeconfig',
    ),
    _s(
        "--target-kubeconfig",
        "target.kubeconfig",
        "str",
        "the target cluster's kubeconfig (the Nodes machines join); default: --kubeconfig",
    ),
    _s("--control-context", "control.context", "str", "kubeconfig context of the control cluster"),
    _s("--target-context", "target.context", "str", "kubeconfig context of the target cluster"),
    _s("--control-kube-api-qps", "control.qps", "float", "QPS towards the control cluster"),
    _s("--control-kube-api-burst", "control.burst", "int", "burst towards the control cluster"),
    _s("--target-kube-api-qps", "target.qps", "float", "QPS towards the target cluster"),
    _s("--target-kube-api-burst", "target.burst", "int", "burst towards the target cluster"),
    _s("--workers", "workers", "workers", "worker count per controller, NAME=N (repeatable)"),
    _s("--machine-workers", "workers.machine", "int", "workers of the machine controller"),
    _s(
        "--node-delete-workers", "workers.nodedelete", "int", "workers of the nodedelete controller"
    ),
    _s("--storage-gc-workers", "workers.storagegc", "int", "workers of the storagegc controller"),
    _s("--machine-namespace", "machine.namespace", "str", "namespace the Machines live in"),
    _s("--namespace", "machine.namespace", "str", "MCM's name for --machine-namespace"),
    _s(
        "--machine-creation-timeout",
        "machine.creationTimeout",
        "duration",
        "how long a Machine may take to join",
    ),
    _s(
        "--machine-health-timeout",
        "machine.healthTimeout",
        "duration",
        "how long a Machine may be unhealthy before it is replaced",
    ),
    _s("--machine-drain-timeout", "machine.drainTimeout", "duration", "drain time limit"),
    _s(
        "--machine-max-evict-retries",
        "machine.maxEvictRetries",
        "int",
        "eviction attempts per pod during a drain",
    ),
    _s(
        "--machine-pv-detach-timeout",
        "machine.pvDetachTimeout",
        "duration",
        "wait for volumes to detach during a drain",
    ),
    _s(
        "--machine-pv-reattach-timeout",
        "machine.pvReattachTimeout",
        "duration",
        "wait for volumes to reattach elsewhere during a drain",
    ),
    _s(
        "--metrics-per-machine",
        "machine.metricsPerMachine",
        "bool",
        "export the per-machine mcm_machine_* series (false: only the count; for large pools)",
    ),
    _s(
        "--node-conditions",
        "machine.nodeConditions",
        "list",
        "node conditions that make a Machine unhealthy, comma-separated",
    ),
    _s(
        "--machine-safety-orphan-vms-period",
        "machine.safetyOrphanVMsPeriod",
        "duration",
        "period of the orphan-VM sweep",
    ),
    _s(
        "--machine-safety-apiserver-statuscheck-period",
        "machine.safetyAPIServerStatusCheckPeriod",
        "duration",
        "how often the safety controller checks that the API server answers",
    ),
    _s(
        "--machine-safety-apiserver-statuscheck-timeout",
        "machine.safetyAPIServerStatusCheckTimeout",
        "duration",
        "how long the API server may be unreachable before the machine controller freezes",
    ),
    _s(
        "--safety-up",
        "machine.safetyUp",
        "int",
        "machines a MachineSet may have beyond its limit (desired, or deployment replicas + "
        "maxSurge) before it is frozen",
    ),
    _s(
        "--safety-down",
        "machine.safetyDown",
        "int",
        "how far below the freeze limit a frozen MachineSet must fall to be unfrozen",
    ),
    _s(
        "--machine-safety-overshooting-period",
        "machine.safetyOvershootingPeriod",
        "duration",
        "how often MachineSets are checked for too many machines",
    ),
    _s("--csi-driver", "storage.csiDriver", "str", "CSI driver name of the storage backend"),
    _s("--storage-backend-url", "storage.backendURL", "str", "URL of the storage backend API"),
    _s(
        "--storage-delete-timeout",
        "storage.deleteTimeout",
        "duration",
        "time limit of one storage-node delete (or list) call to the backend",
    ),
    _s(
        "--node-delete-gc-delay",
        "storage.gcDelay",
        "duration",
        "wait after start before the first storage GC (0 means StorageOS's 10s)",
    ),
    _s(
        "--node-delete-gc-interval",
        "storage.gcInterval",
        "duration",
        "period of the storage GC; 0 disables it",
    ),
)

CONFIG_FLAG: Final = "--config"
_OPTIONAL_STRINGS: Final = frozenset(
    {
        ("kubeconfig",),
        ("context",),
        ("master",),
        ("metricsCertPath",),
        ("leaderElection", "namespace"),
        ("storage", "backendURL"),
        *((role, field) for role in ("control", "target") for field in ("kubeconfig", "context")),
    }
)


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one flag per setting. Values are parsed by ``load_config``, so a bad
    one is reported like any other configuration error, naming the flag."""
    group = parser.add_argument_group(
        "configuration", "Flags override KUBETRIO_* environment variables, which override the file."
    )
    group.add_argument(
        CONFIG_FLAG,
        metavar="FILE",
        default=None,
        help=f"YAML or TOML config file (env {env_var(CONFIG_FLAG)})",
    )
    defaults = config_to_dict(ManagerConfig())
    for setting in SETTINGS:
        given, default = _lookup(defaults, setting.path)
        shown = f"default: {format_default(default)}; " if given else ""
        help_text = f"{setting.help} ({shown}env {setting.env})"
        if setting.kind == "bool":
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                nargs="?",
                const="true",
                default=None,
                metavar="BOOL",
                help=help_text,
            )
        elif setting.kind == "workers":
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                action="append",
                default=None,
                metavar="NAME=N",
                help=help_text,
            )
        else:
            group.add_argument(
                setting.flag,
                dest=setting.dest,
                default=None,
                metavar=setting.kind.upper(),
                help=help_text,
            )


# --- loading ----------------------------------------------------------------------------------

FieldPath = tuple[str, ...]


class _Sources:
    """Which source set each field path, to name it in an error."""

    def __init__(self, file_label: str | None, file_data: Mapping[str, Any]) -> None:
        self.file_label = file_label
        self.file_data = file_data
        self.explicit: dict[FieldPath, str] = {}  # path -> "environment variable X" / "flag --x"

    def set(self, path: FieldPath, label: str) -> None:
        self.explicit[path] = label

    def label(self, path: Sequence[str]) -> str | None:
        """The source of ``path`` (or of its nearest ancestor set as a whole); None = default."""
        for end in range(len(path), 0, -1):
            found = self.explicit.get(tuple(path[:end]))
            if found is not None:
                return found
        return self.file_label if self.file_label and _lookup(self.file_data, path)[0] else None

    def is_default(self, path: Sequence[str]) -> bool:
        return self.label(path) is None

    def error(self, path: Sequence[str], message: str) -> ConfigError:
        source = self.label(path)
        dotted = _dotted(path)
        if source is None:
            return ConfigError(f"{dotted}: {message}" if dotted else message)
        if source == self.file_label:
            return ConfigError(
                f"{source}: {dotted}: {message}" if dotted else f"{source}: {message}"
            )
        return ConfigError(f"{source} ({dotted}): {message}" if dotted else f"{source}: {message}")


def _dotted(path: Sequence[str]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def load_config(
    args: argparse.Namespace, environ: Mapping[str, str], known_controllers: Collection[str]
) -> ManagerConfig:
    """The validated configuration from defaults, file, environment and ``args``.

    ``args`` comes from a parser that had ``add_config_flags``; ``known_controllers`` are the
    names a controller registry can set up. Raises ConfigError with a one-line message.
    """
    file_flag = getattr(args, "config", None)
    file_name = file_flag if file_flag is not None else environ.get(env_var(CONFIG_FLAG)) or None
    file_data = _read_file(Path(file_name)) if file_name else {}
    file_label = f"config file {file_name}" if file_name else None
    sources = _Sources(file_label, file_data)

    # The file alone first, so that its errors always name the file.
    base = _convert(
        _with_default_workers(file_data, file_label),
        sources,
        everything_from=file_label,
        dec_hook=_file_dec_hook,
    )
    merged = msgspec.to_builtins(base, enc_hook=_as_seconds)
    assert isinstance(merged, dict)

    kubeconfig = environ.get("KUBECONFIG")
    if kubeconfig:
        _put(merged, ("kubeconfig",), kubeconfig, "environment variable KUBECONFIG", sources)
    for setting in SETTINGS:
        if setting.env in environ:
            label = f"environment variable {setting.env}"
            _apply(merged, setting, [environ[setting.env]], label, sources)
    given_as: dict[FieldPath, tuple[str, Any]] = {}  # two flags for one field (--namespace)
    for setting in SETTINGS:
        given = getattr(args, setting.dest, None)
        if given is not None:
            values = given if isinstance(given, list) else [given]
            other = given_as.setdefault(setting.path, (setting.flag, values))
            if other[1] != values:
                raise ConfigError(
                    f"flag {setting.flag}: disagrees with flag {other[0]} (both set "
                    f"{_dotted(setting.path)})"
                )
            _apply(merged, setting, values, f"flag {setting.flag}", sources)

    config = _convert(merged, sources, everything_from=None)
    _validate(config, sources, known_controllers)
    return config


def _read_file(path: Path) -> dict[str, Any]:
    label = f"config file {path}"
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(f"{label}: unsupported extension {suffix!r}; use .yaml, .yml or .toml")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: not UTF-8 text ({exc.reason})") from None
    try:
        data = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: invalid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(data, dict | None):
        raise ConfigError(f"{label}: expected a mapping at the top, got {type(data).__name__}")
    if not data:
        # Almost always the wrong file or a template that rendered to nothing, not a wish
        # for all defaults (which needs no --config at all).
        raise ConfigError(f"{label}: the file is empty (it sets nothing)")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def _with_default_workers(data: dict[str, Any], label: str | None) -> dict[str, Any]:
    """A file's ``workers`` adds to and overrides the defaults rather than replacing them all.

    Counts are checked here because msgspec would not name the key of a bad one.
    """
    workers = data.get("workers")
    if not isinstance(workers, dict):
        return data
    for name, count in workers.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise ConfigError(f"{label}: workers.{name}: expected an integer, got {_show(count)}")
    return {**data, "workers": {**DEFAULT_WORKERS, **workers}}


_ERROR_PATH = re.compile(r" - at `\$((?:\.[^.\[`]+|\[[^\]]*\])*)`$")


def _convert(
    data: Mapping[str, Any],
    sources: _Sources,
    *,
    everything_from: str | None,
    dec_hook: Callable[[type, Any], Any] = _dec_hook,
) -> ManagerConfig:
    """msgspec's conversion, its error turned into one line that names where the value came from.

    ``everything_from`` labels every error (the file, when it is checked on its own); otherwise
    the source is looked up by the error's field path.
    """
    try:
        return msgspec.convert(data, ManagerConfig, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _ERROR_PATH.search(text)
        path: list[str] = []
        if match:
            text = text[: match.start()]
            # "[...]" stands for a mapping key msgspec does not name; the mapping's path will do.
            path = [p for p in re.split(r"\.|\[|\]", match.group(1)) if p and p != "..."]
        message = _readable(text, path, data)
        if everything_from is not None:
            dotted = _dotted(path)
            prefix = f"{everything_from}: {dotted}" if dotted else everything_from
            raise ConfigError(f"{prefix}: {message}") from None
        raise sources.error(path, message) from None


def _as_seconds(value: Any) -> Any:
    if isinstance(value, Duration):
        return float(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _readable(message: str, path: Sequence[str], data: Mapping[str, Any]) -> str:
    unknown = re.fullmatch(r"Object contains unknown field `(.*)`", message)
    if unknown:
        name = unknown.group(1)
        hint = difflib.get_close_matches(name, _field_names(path), n=1)
        suggestion = f' (did you mean "{hint[0]}"?)' if hint else ""
        return f'unknown field "{name}"{suggestion}'
    if message.startswith("Invalid enum value"):
        allowed = _allowed_values(path)
        if allowed:
            message = f"Expected one of {', '.join(map(_show, allowed))}"
    message = message.replace("`", "")
    if message.startswith("Expected object"):
        message = message.replace("Expected object", "Expected a mapping", 1)
    if ", got " not in message and "got " not in message:
        found, value = _lookup(data, path)
        if found:
            message += f", got {_show(value)}"
    return message[:1].lower() + message[1:]


def _lookup(data: Any, path: Sequence[str]) -> tuple[bool, Any]:
    node = data
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _type_at(path: Sequence[str]) -> msgspec.inspect.Type | None:
    """The declared type of the field at ``path`` (file names), for friendlier messages."""
    current: msgspec.inspect.Type = msgspec.inspect.type_info(ManagerConfig)
    for part in path:
        if not isinstance(current, msgspec.inspect.StructType):
            return None
        field = next((f for f in current.fields if f.encode_name == part), None)
        if field is None:
            return None
        current = field.type
    return current


def _field_names(path: Sequence[str]) -> list[str]:
    found = _type_at(path)
    return (
        [f.encode_name for f in found.fields]
        if isinstance(found, msgspec.inspect.StructType)
        else []
    )


def _allowed_values(path: Sequence[str]) -> list[Any]:
    found = _type_at(path)
    return list(found.values) if isinstance(found, msgspec.inspect.LiteralType) else []


_TRUE: Final = frozenset({"1", "t", "true", "yes", "y", "on"})
_FALSE: Final = frozenset({"0", "f", "false", "no", "n", "off"})


def _apply(
    merged: dict[str, Any], setting: Setting, values: list[str], label: str, sources: _Sources
) -> None:
    """Parse text from a flag or variable by the setting's kind and put it on its path."""
    if setting.kind == "workers":
        for item in (part.strip() for value in values for part in value.split(",")):
            if not item:
                continue
            name, sep, count = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"{label}: expected NAME=N, got {_show(item)}")
            number = _parse_text("int", count.strip(), label)
            _put(merged, (*setting.path, name.strip()), number, label, sources)
        return
    _put(
        merged, setting.path, _parse_text(setting.kind, values[-1], label, setting), label, sources
    )


def _parse_text(kind: Kind, text: str, label: str, setting: Setting | None = None) -> Any:
    value = text.strip()
    try:
        if kind == "bool":
            lowered = value.lower()
            if lowered not in _TRUE | _FALSE:
                raise ValueError(f"expected true or false, got {_show(text)}")
            return lowered in _TRUE
        if kind == "int":
            if not re.fullmatch(r"[+-]?\d+", value):
                raise ValueError(f"expected an integer, got {_show(text)}")
            return int(value)
        if kind == "float":
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"expected a number, got {_show(text)}") from None
            if not math.isfinite(number):
                raise ValueError(f"expected a finite number, got {_show(text)}")
            return number
        if kind == "duration":
            return float(Duration.parse(value))
        if kind == "list":
            return _parse_list(text)
    except ValueError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if setting is not None and setting.path in _OPTIONAL_STRINGS and not value:
        return None  # an empty KUBETRIO_MASTER= means "not set", not an empty URL
    return text


def _parse_list(text: str) -> list[str]:
    """Comma-separated names; an empty list or item is refused, not dropped: ``a,,b`` or a
    trailing comma is a typo, and an empty ``--controllers`` would run nothing at all."""
    if not text.strip():
        raise ValueError("expected a comma-separated list of names, got an empty value")
    items = [item.strip() for item in text.split(",")]
    for number, item in enumerate(items, 1):
        if not item:
            raise ValueError(f"item {number} of {_show(text)} is empty")
    return items


def _put(
    merged: dict[str, Any], path: FieldPath, value: Any, label: str, sources: _Sources
) -> None:
    node = merged
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    sources.set(path, label)


# --- checks that span fields or need more than a type -----------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
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


def _validate(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    checks: list[Callable[[ManagerConfig, _Sources, Collection[str]], None]] = [
        _check_controllers,
        _check_workers,
        _check_addresses,
        _check_metrics_tls,
        _check_logging,
        _check_leader_election,
        _check_durations,
        _check_names,
        _check_finite,
        _check_clusters,
    ]
    for check in checks:
        check(config, sources, known)


def _check_controllers(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    if sources.is_default(["controllers"]):
        return  # the default set names the built-ins; the CLI enables those it has
    unknown = [name for name in config.controllers if name not in known]
    if unknown:
        raise sources.error(
            ["controllers"],
            f"unknown controller{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(_show, unknown))}; known: {', '.join(sorted(known))}",
        )
    if len(set(config.controllers)) != len(config.controllers):
        twice = sorted({n for n in config.controllers if config.controllers.count(n) > 1})
        raise sources.error(["controllers"], f"listed more than once: {', '.join(twice)}")


def _check_workers(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    for name, count in config.workers.items():
        path = ["workers", name]
        if sources.is_default(path):
            continue  # built-in defaults name the built-in controllers, registered or not
        if name not in known:
            raise sources.error(
                path, f"unknown controller {_show(name)}; known: {', '.join(sorted(known))}"
            )
        if count < 1:
            raise sources.error(path, f"expected at least 1 worker, got {count}")


def _check_addresses(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
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
        (["master"], config.master),
    ):
        problem = None if url is None else _url_problem(url)
        if problem is not None:
            raise sources.error(path, problem)


def _check_metrics_tls(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
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
        return f"expected an http(s) URL, got {_show(url)}"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
    except ValueError:
        return f"invalid port in {_show(url)}"
    return None


def _check_logging(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    try:
        parse_level(config.logging.level)
    except ValueError as exc:
        raise sources.error(["logging", "level"], str(exc).removeprefix("log level: ")) from None


def _check_leader_election(
    config: ManagerConfig, sources: _Sources, known: Collection[str]
) -> None:
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


def _check_durations(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    for section, field in _POSITIVE_DURATIONS:
        value = getattr(getattr(config, _attr(section)), _attr(field))
        if value <= 0:
            raise sources.error([section, field], f"must be greater than 0, got {value}")


def _check_names(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    for path, value, rule, pattern in (
        (["leaderElection", "namespace"], config.leader_election.namespace, "label", _DNS_LABEL),
        (["machine", "namespace"], config.machine.namespace, "label", _DNS_LABEL),
        (["leaderElection", "name"], config.leader_election.name, "subdomain", _DNS_SUBDOMAIN),
    ):
        if value is not None and not pattern.match(value):
            raise sources.error(
                path,
                f'expected a lower-case DNS-1123 {rule} like "kube-system", got {_show(value)}',
            )


def _check_finite(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
    """YAML's ``.inf`` and ``.nan`` are floats too; an infinite QPS is no limit at all."""
    if not math.isfinite(config.client.qps):
        raise sources.error(["client", "qps"], f"expected a finite number, got {config.client.qps}")


def _check_clusters(config: ManagerConfig, sources: _Sources, known: Collection[str]) -> None:
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
