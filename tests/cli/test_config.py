"""The manager's configuration: layering, parsing, and errors that say where to look."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kubetrio.cmd.config import (
    DEFAULT_WORKERS,
    SETTINGS,
    ManagerConfig,
    Setting,
    config_to_dict,
    env_var,
)
from kubetrio.runtime.util.duration import Duration
from tests.helpers.config import (
    apart_for,
    error_of,
    load,
    parser,
    sample_text,
    value_at,
    write,
)

FULL_YAML = """\
kubeconfig: /etc/kubetrio/kubeconfig
context: prod
master: https://10.0.0.1:6443
controllers: [machine, nodedelete]
metricsBindAddress: ":9090"
healthProbeBindAddress: "[::1]:9091"
leaderElection:
  enabled: true
  namespace: kubetrio-system
  name: kubetrio-leader-prod
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
  releaseOnCancel: false
gracefulShutdownTimeout: 1m
logging:
  format: json
  level: debug
client:
  qps: 50.5
  burst: 100
  timeout: 45s
workers:
  machine: 10
  nodedelete: 3
machine:
  namespace: shoot--prod
  creationTimeout: 30m
  healthTimeout: 15m
  drainTimeout: 1h30m
  maxEvictRetries: 10
  pvDetachTimeout: 3m
  pvReattachTimeout: 100ms
  nodeConditions: [KernelDeadlock, DiskPressure]
  safetyOrphanVMsPeriod: 30m
storage:
  csiDriver: csi.example.com
  backendURL: https://storage.example.com:5705
  deleteTimeout: 1m
  gcDelay: 0s
  gcInterval: 0s
"""

FULL_TOML = """\
kubeconfig = "/etc/kubetrio/kubeconfig"
controllers = ["machine"]
metricsBindAddress = "0"
gracefulShutdownTimeout = "90s"

[leaderElection]
enabled = true
leaseDuration = "1m"

[workers]
machine = 2

[machine]
nodeConditions = ["ReadonlyFilesystem"]
drainTimeout = "45m"

[storage]
gcInterval = "2h"
"""


# --- defaults and layering ------------------------------------------------------------------


def test_defaults() -> None:
    config = load()
    assert config.kubeconfig is None and config.context is None and config.master is None
    assert config.controllers == (
        "machine",
        "machineset",
        "machinedeployment",
        "safety",
        "nodedelete",
        "storagegc",
    )
    # Unset: the Manager's (controller-runtime's) defaults, ":8080"/":8443" and ":8081".
    assert config.metrics_bind_address is None and config.health_probe_bind_address is None
    assert (config.metrics_secure, config.metrics_cert_path) == (False, None)
    assert (config.metrics_cert_name, config.metrics_cert_key) == ("tls.crt", "tls.key")
    le = config.leader_election
    # Unset namespace: the pod's, else kube-system (cmd/run.py, tests/cli/test_in_cluster_manager).
    assert (le.enabled, le.namespace, le.name) == (False, None, "kubetrio-leader")
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15, 10, 2)
    assert le.release_on_cancel is True
    assert config.graceful_shutdown_timeout == 30
    assert config.gc == "tuned"  # measured: tests/bench/scale.py and machines.py, --gc
    assert (config.logging.format, config.logging.level) == ("text", "info")
    assert (config.client.qps, config.client.burst, config.client.timeout) == (20, 30, 30)
    assert config.workers == {
        "machine": 5,
        "machineset": 5,
        "machinedeployment": 5,
        "nodedelete": 5,
        "storagegc": 1,
    }
    m = config.machine
    assert m.namespace == "default"
    assert (m.creation_timeout, m.health_timeout, m.drain_timeout) == (1200, 600, 7200)
    assert m.max_evict_retries == 360
    assert (m.pv_detach_timeout, m.pv_reattach_timeout) == (120, 90)
    assert m.node_conditions == (
        "KernelDeadlock",
        "ReadonlyFilesystem",
        "DiskPressure",
        "NetworkUnavailable",
    )
    assert m.safety_orphan_vms_period == 900
    s = config.storage
    assert (s.csi_driver, s.backend_url) == ("csi.storageos.com", None)
    assert (s.delete_timeout, s.gc_delay, s.gc_interval) == (20, 30, 3600)


def test_flags_beat_environment_beat_file_beat_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "metricsBindAddress: ':1001'\nhealthProbeBindAddress: ':1002'\n"
        "gracefulShutdownTimeout: 1s\nlogging: {level: warning}\n",
    )
    env = {
        "KUBETRIO_HEALTH_PROBE_BIND_ADDRESS": ":2002",
        "KUBETRIO_GRACEFUL_SHUTDOWN_TIMEOUT": "2s",
        "KUBETRIO_LOG_FORMAT": "json",
    }
    config = load(["--config", path, "--graceful-shutdown-timeout", "3s"], env)
    assert config.metrics_bind_address == ":1001"  # file only
    assert config.health_probe_bind_address == ":2002"  # env over file
    assert config.graceful_shutdown_timeout == 3  # flag over env over file
    assert config.logging.format == "json"  # env over default
    assert config.logging.level == "warning"  # file, untouched by the others
    assert config.client.burst == 30  # default


def test_config_file_from_environment_and_flag(tmp_path: Path) -> None:
    from_env = write(tmp_path, "context: from-env\n", "env.yaml")
    from_flag = write(tmp_path, 'context = "from-flag"\n', "flag.toml")
    assert load([], {"KUBETRIO_CONFIG": from_env}).context == "from-env"
    assert load(["--config", from_flag], {"KUBETRIO_CONFIG": from_env}).context == "from-flag"


def test_kubeconfig_layers(tmp_path: Path) -> None:
    path = write(tmp_path, "kubeconfig: /from/file\n")
    assert load(["--config", path]).kubeconfig == "/from/file"
    assert load(["--config", path], {"KUBECONFIG": "/from/env"}).kubeconfig == "/from/env"
    env = {"KUBECONFIG": "/from/env", "KUBETRIO_KUBECONFIG": "/from/ours"}
    assert load([], env).kubeconfig == "/from/ours"
    assert load(["--kubeconfig", "/from/flag"], env).kubeconfig == "/from/flag"
    assert load([], {"KUBECONFIG": ""}).kubeconfig is None


def test_empty_optional_string_means_unset() -> None:
    assert load([], {"KUBETRIO_MASTER": ""}).master is None
    assert load(["--storage-backend-url="]).storage.backend_url is None


@pytest.mark.parametrize(
    ("argv", "env", "enabled"),
    [
        (["--leader-elect"], {}, True),
        (["--leader-elect=false"], {"KUBETRIO_LEADER_ELECT": "true"}, False),
        (["--leader-elect", "0"], {}, False),
        ([], {"KUBETRIO_LEADER_ELECT": "TRUE"}, True),
        ([], {"KUBETRIO_LEADER_ELECT": "1"}, True),
        ([], {"KUBETRIO_LEADER_ELECT": "no"}, False),
    ],
)
def test_boolean_flag_forms(argv: list[str], env: dict[str, str], enabled: bool) -> None:
    assert load(argv, env).leader_election.enabled is enabled


def test_workers_merge_with_defaults_and_layer(tmp_path: Path) -> None:
    path = write(tmp_path, "workers: {machine: 7}\n")
    config = load(["--config", path])
    assert config.workers == {
        "machine": 7,
        "machineset": 5,
        "machinedeployment": 5,
        "nodedelete": 5,
        "storagegc": 1,
    }
    config = load(
        ["--config", path, "--workers", "storagegc=2", "--workers=machine=9,nodedelete=4"],
        {"KUBETRIO_WORKERS": "machine=8", "KUBETRIO_NODE_DELETE_WORKERS": "6"},
    )
    assert config.workers == {
        "machine": 9,
        "machineset": 5,
        "machinedeployment": 5,
        "nodedelete": 4,
        "storagegc": 2,
    }
    assert load(["--node-delete-workers", "12"]).workers["nodedelete"] == 12
    assert load(["--machine-workers", "2"]).workers_for("machine") == 2
    assert load(["--storage-gc-workers", "3"]).workers_for("storagegc") == 3
    assert load().workers_for("someone-elses") == 1


def test_controllers_flag_and_custom_registry() -> None:
    assert load(["--controllers", " machine , storagegc"]).controllers == ("machine", "storagegc")
    config = load(["--controllers", "mine", "--workers", "mine=4"], known=["mine"])
    assert config.controllers == ("mine",)
    assert config.workers_for("mine") == 4


def expected_value(setting: Setting, text: str) -> Any:
    if setting.kind == "list":
        return text.split(",")
    if setting.kind == "workers":
        return {**DEFAULT_WORKERS, "storagegc": 4}
    if setting.kind in ("bool", "int", "float"):
        return yaml.safe_load(text)
    return text


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.flag)
def test_every_flag_and_variable_sets_its_field(setting: Setting) -> None:
    text = sample_text(setting.path)
    expected = expected_value(setting, text)
    apart = apart_for(setting.path)
    assert value_at(load([*apart, setting.flag, text]), setting.path) == expected
    assert value_at(load(apart, {setting.env: text}), setting.path) == expected
    assert value_at(load(), setting.path) != expected


def test_flags_and_variables_are_unique_and_named_after_each_other() -> None:
    flags = [s.flag for s in SETTINGS]
    assert len(set(flags)) == len(flags)
    assert env_var("--leader-elect") == "KUBETRIO_LEADER_ELECT"
    assert env_var("--metrics-bind-address") == "KUBETRIO_METRICS_BIND_ADDRESS"
    for name in (
        "--machine-creation-timeout",
        "--machine-health-timeout",
        "--machine-drain-timeout",
        "--machine-max-evict-retries",
        "--machine-pv-detach-timeout",
        "--machine-pv-reattach-timeout",
        "--node-conditions",
        "--machine-safety-orphan-vms-period",
        "--node-delete-workers",
        "--node-delete-gc-delay",
        "--node-delete-gc-interval",
    ):
        assert name in flags


def test_help_names_the_environment_variables() -> None:
    text = " ".join(parser().format_help().split())
    assert "KUBETRIO_LEADER_ELECT" in text
    assert "KUBETRIO_CONFIG" in text


# --- files ------------------------------------------------------------------------------------


def test_full_yaml_example(tmp_path: Path) -> None:
    config = load(["--config", write(tmp_path, FULL_YAML)])
    assert config.master == "https://10.0.0.1:6443"
    assert config.controllers == ("machine", "nodedelete")
    assert config.health_probe_bind_address == "[::1]:9091"
    assert config.leader_election.renew_deadline == 20
    assert config.leader_election.release_on_cancel is False
    assert config.graceful_shutdown_timeout == 60
    assert config.client.qps == 50.5
    assert config.workers == {
        "machine": 10,
        "machineset": 5,
        "machinedeployment": 5,
        "nodedelete": 3,
        "storagegc": 1,
    }
    assert config.machine.drain_timeout == 5400
    assert config.machine.pv_reattach_timeout == pytest.approx(0.1)
    assert config.machine.safety_orphan_vms_period == 1800
    assert config.storage.backend_url == "https://storage.example.com:5705"
    assert (config.storage.gc_delay, config.storage.gc_interval) == (0, 0)


def test_full_yaml_example_round_trips(tmp_path: Path) -> None:
    config = load(["--config", write(tmp_path, FULL_YAML)])
    dumped = config_to_dict(config)
    assert dumped["leaderElection"]["leaseDuration"] == "30s"
    assert dumped["machine"]["drainTimeout"] == "1h30m"
    assert dumped["machine"]["pvReattachTimeout"] == "100ms"
    assert dumped["storage"]["backendURL"] == "https://storage.example.com:5705"
    again = load(["--config", write(tmp_path, yaml.safe_dump(dumped), "again.yaml")])
    assert again == config
    # The defaults round-trip too, and a dump leaves unset values out.
    defaults = config_to_dict(load())
    assert "kubeconfig" not in defaults
    assert load(["--config", write(tmp_path, yaml.safe_dump(defaults), "d.yaml")]) == load()


def test_full_toml_example(tmp_path: Path) -> None:
    config = load(["--config", write(tmp_path, FULL_TOML, "kubetrio.toml")])
    assert config.kubeconfig == "/etc/kubetrio/kubeconfig"
    assert config.controllers == ("machine",)
    assert config.metrics_bind_address == "0"
    assert config.graceful_shutdown_timeout == 90
    assert config.leader_election.enabled is True
    assert config.leader_election.lease_duration == 60
    assert config.workers == {
        "machine": 2,
        "machineset": 5,
        "machinedeployment": 5,
        "nodedelete": 5,
        "storagegc": 1,
    }
    assert config.machine.node_conditions == ("ReadonlyFilesystem",)
    assert config.machine.drain_timeout == 2700
    assert config.storage.gc_interval == 7200


@pytest.mark.parametrize(
    ("text", "name"),
    [("", "x.yaml"), ("# nothing here\n", "x.yaml"), ("{}\n", "x.yml"), ("# none\n", "x.toml")],
)
def test_an_empty_config_file_is_an_error_naming_it(tmp_path: Path, text: str, name: str) -> None:
    assert file_error(tmp_path, text, name) == "the file is empty (it sets nothing)"


def test_config_is_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        ManagerConfig("/kubeconfig")  # type: ignore[misc]
    config = load()
    with pytest.raises(AttributeError):
        config.master = "x"  # type: ignore[misc]


# --- errors -----------------------------------------------------------------------------------


def file_error(tmp_path: Path, text: str, name: str = "x.yaml") -> str:
    path = write(tmp_path, text, name)
    message = error_of(["--config", path])
    assert message.startswith(f"config file {path}: ")
    return message.removeprefix(f"config file {path}: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "leaderElection:\n  leaseDuration: abc\n",
            'leaderElection.leaseDuration: expected a duration like "15s", got "abc"',
        ),
        (
            "leaderElection:\n  leaseDurration: 15s\n",
            'leaderElection: unknown field "leaseDurration" (did you mean "leaseDuration"?)',
        ),
        ("verbosity: 3\n", 'unknown field "verbosity"'),
        ("machine:\n  drainTimeout: -5s\n", 'machine.drainTimeout: expected a duration like "15s"'),
        (
            "machine:\n  drainTimeout: true\n",
            'machine.drainTimeout: expected a duration string like "15s", got True',
        ),
        # A bare number could mean seconds or minutes: a file states the unit.
        (
            "machine:\n  drainTimeout: 30\n",
            'machine.drainTimeout: expected a duration string like "15s", got 30',
        ),
        (
            "leaderElection: {leaseDuration: 1.5}\n",
            'leaderElection.leaseDuration: expected a duration string like "15s", got 1.5',
        ),
        ("client: {qps: .inf}\n", "client.qps: expected a finite number, got inf"),
        ("client: {qps: .nan}\n", "client.qps: expected float > 0.0, got nan"),
        ("controllers: []\n", "controllers: expected array of length >= 1"),
        (
            "machine: {nodeConditions: []}\n",
            "machine.nodeConditions: expected array of length >= 1",
        ),
        (
            "machine: {nodeConditions: [A, '']}\n",
            "machine.nodeConditions[1]: expected str of length >= 1",
        ),
        ("machine:\n  drainTimeout: 1d\n", 'machine.drainTimeout: expected a duration like "15s"'),
        ("machine: 3\n", "machine: expected a mapping, got int"),
        ("client:\n  burst: 0\n", "client.burst: expected int >= 1, got 0"),
        ("client:\n  qps: fast\n", "client.qps: expected float, got str"),
        ("controllers: [machine, 3]\n", "controllers[1]: expected str, got int"),
        ("controllers: machine\n", "controllers: expected array, got str"),
        ("gc: fast\n", 'gc: expected one of "default", "tuned", got "fast"'),
        ("logging: {format: xml}\n", 'logging.format: expected one of "json", "text", got "xml"'),
        ("logging: {level: loud}\n", "logging.level: expected one of debug, info"),
        ("workers: {machine: many}\n", 'workers.machine: expected an integer, got "many"'),
        ("workers: {machine: 0}\n", "workers.machine: expected at least 1 worker, got 0"),
        ("workers: {other: 2}\n", 'workers.other: unknown controller "other"; known: machine'),
        ("controllers: [machine, gc]\n", 'controllers: unknown controller "gc"; known: machine'),
        ("controllers: [machine, machine]\n", "controllers: listed more than once: machine"),
        ("metricsBindAddress: localhost\n", "metricsBindAddress: bind address 'localhost'"),
        ("healthProbeBindAddress: ':99999'\n", "healthProbeBindAddress: bind address ':99999'"),
        (
            "leaderElection: {leaseDuration: 5s}\n",
            "leaderElection.leaseDuration: must be greater than leaderElection.renewDeadline "
            "(10s), got 5s",
        ),
        (
            "leaderElection: {renewDeadline: 1s}\n",
            "leaderElection.renewDeadline: must be greater than leaderElection.retryPeriod (2s), "
            "got 1s",
        ),
        (
            "leaderElection: {retryPeriod: 0s}\n",
            "leaderElection.retryPeriod: must be greater than 0",
        ),
        (
            "leaderElection: {namespace: Kube_System}\n",
            "leaderElection.namespace: expected a lower",
        ),
        ("machine: {namespace: ''}\n", "machine.namespace: expected str of length >= 1"),
        ("machine: {creationTimeout: 0s}\n", "machine.creationTimeout: must be greater than 0"),
        ("storage: {backendURL: 'storage:5705'}\n", "storage.backendURL: expected an http(s) URL"),
        ("master: 10.0.0.1\n", 'master: expected an http(s) URL, got "10.0.0.1"'),
        (
            "machine: {simCloudURL: 'cloud:8080'}\n",
            'machine.simCloudURL: expected an http(s) URL, got "cloud:8080"',
        ),
        (
            "storage: {backendURL: 'http://h:abc'}\n",
            'storage.backendURL: invalid port in "http://h:abc"',
        ),
        ("- a\n- b\n", "expected a mapping at the top, got list"),
        ("a: [\n", "invalid YAML: "),
    ],
)
def test_file_errors_name_the_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    assert file_error(tmp_path, text).startswith(expected)


def test_renew_deadline_error_when_only_it_is_wrong(tmp_path: Path) -> None:
    message = file_error(tmp_path, "leaderElection: {renewDeadline: 20s}\n")
    assert message == (
        "leaderElection.renewDeadline: must be less than leaderElection.leaseDuration (15s), "
        "got 20s"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[leaderElection]\nleaseDurration = "15s"\n',
            'leaderElection: unknown field "leaseDurration" (did you mean "leaseDuration"?)',
        ),
        ('[storage]\ncsi_driver = "x"\n', 'storage: unknown field "csi_driver"'),
        ('logLevel = "debug"\n', 'unknown field "logLevel"'),
        ("[client]\nburst = -1\n", "client.burst: expected int >= 1, got -1"),
        ("a = \n", "invalid TOML: "),
    ],
)
def test_toml_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert file_error(tmp_path, text, "x.toml").startswith(expected)


@pytest.mark.parametrize("section", ["leaderElection", "logging", "client", "machine", "storage"])
def test_every_section_forbids_unknown_fields(tmp_path: Path, section: str) -> None:
    message = file_error(tmp_path, f"{section}:\n  xyz: 1\n")
    assert message == f'{section}: unknown field "xyz"'


def test_missing_file_and_wrong_extension(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    assert error_of(["--config", missing]) == (
        f"config file {missing}: cannot read it: No such file or directory"
    )
    json_file = write(tmp_path, "{}", "x.json")
    assert error_of(["--config", json_file]) == (
        f"config file {json_file}: unsupported extension '.json'; use .yaml, .yml or .toml"
    )
    assert error_of([], {"KUBETRIO_CONFIG": missing}).startswith(f"config file {missing}: ")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--node-delete-workers", "-1"],
            "flag --node-delete-workers (workers.nodedelete): expected at least 1 worker, got -1",
        ),
        (
            ["--node-delete-workers", "two"],
            'flag --node-delete-workers: expected an integer, got "two"',
        ),
        (["--workers", "machine"], 'flag --workers: expected NAME=N, got "machine"'),
        (
            ["--workers", "machine=0"],
            "flag --workers (workers.machine): expected at least 1 worker",
        ),
        (["--workers", "nope=2"], 'flag --workers (workers.nope): unknown controller "nope"'),
        (
            ["--machine-drain-timeout", "2 hours"],
            'flag --machine-drain-timeout: expected a duration like "15s", got "2 hours"',
        ),
        (
            ["--metrics-bind-address", "8080"],
            "flag --metrics-bind-address (metricsBindAddress): bind address '8080'",
        ),
        (["--health-probe-bind-address", "[::1:80"], "flag --health-probe-bind-address "),
        (
            ["--webhook-bind-address", "9443"],
            "flag --webhook-bind-address (webhookBindAddress): bind address '9443'",
        ),
        (["--leader-elect", "maybe"], 'flag --leader-elect: expected true or false, got "maybe"'),
        (
            ["--leader-elect-lease-duration", "5s"],
            "flag --leader-elect-lease-duration "
            "(leaderElection.leaseDuration): must be greater than leaderElection.renewDeadline",
        ),
        (
            ["--leader-elect-retry-period", "0"],
            "flag --leader-elect-retry-period (leaderElection.retryPeriod): must be greater than 0",
        ),
        (
            ["--log-format", "yaml"],
            'flag --log-format (logging.format): expected one of "json", "text", got "yaml"',
        ),
        (["--gc", "off"], 'flag --gc (gc): expected one of "default", "tuned", got "off"'),
        (["--log-level", "trace"], "flag --log-level (logging.level): expected one of debug"),
        (["--kube-api-qps", "0"], "flag --kube-api-qps (client.qps): expected float > 0.0, got 0"),
        (["--kube-api-qps", "lots"], 'flag --kube-api-qps: expected a number, got "lots"'),
        (["--kube-api-qps", "inf"], 'flag --kube-api-qps: expected a finite number, got "inf"'),
        (["--kube-api-qps", "NaN"], 'flag --kube-api-qps: expected a finite number, got "NaN"'),
        (
            ["--kube-api-qps=-Infinity"],
            'flag --kube-api-qps: expected a finite number, got "-Infinity"',
        ),
        (
            ["--controllers", ""],
            "flag --controllers: expected a comma-separated list of names, got an empty value",
        ),
        (["--controllers", " , "], 'flag --controllers: item 1 of " , " is empty'),
        (["--controllers", "machine,"], 'flag --controllers: item 2 of "machine," is empty'),
        (
            ["--node-conditions", "KernelDeadlock,,DiskPressure"],
            'flag --node-conditions: item 2 of "KernelDeadlock,,DiskPressure" is empty',
        ),
        (
            ["--machine-max-evict-retries", "-3"],
            "flag --machine-max-evict-retries (machine.maxEvictRetries): expected int >= 0, got -3",
        ),
        (
            ["--controllers", "machine,drain"],
            "flag --controllers (controllers): unknown controller "
            '"drain"; known: machine, machinedeployment, machineset, nodedelete, safety, storagegc',
        ),
        (["--master", "ftp://x"], 'flag --master (master): expected an http(s) URL, got "ftp://x"'),
        (
            ["--leader-election-id", "Bad_Name"],
            "flag --leader-election-id (leaderElection.name): "
            'expected a lower-case DNS-1123 subdomain like "kube-system", got "Bad_Name"',
        ),
    ],
)
def test_flag_errors_name_the_flag(argv: list[str], expected: str) -> None:
    assert error_of(argv).startswith(expected)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"KUBETRIO_LEADER_ELECT": "sometimes"},
            'environment variable KUBETRIO_LEADER_ELECT: expected true or false, got "sometimes"',
        ),
        (
            {"KUBETRIO_NODE_DELETE_WORKERS": "0"},
            "environment variable KUBETRIO_NODE_DELETE_WORKERS "
            "(workers.nodedelete): expected at least 1 worker, got 0",
        ),
        (
            {"KUBETRIO_WORKERS": "machine=x"},
            'environment variable KUBETRIO_WORKERS: expected an integer, got "x"',
        ),
        (
            {"KUBETRIO_NODE_DELETE_GC_INTERVAL": "hourly"},
            "environment variable "
            'KUBETRIO_NODE_DELETE_GC_INTERVAL: expected a duration like "15s", got "hourly"',
        ),
        (
            {"KUBETRIO_METRICS_BIND_ADDRESS": "localhost"},
            "environment variable "
            "KUBETRIO_METRICS_BIND_ADDRESS (metricsBindAddress): bind address 'localhost'",
        ),
        (
            {"KUBETRIO_GC": "Tuned"},
            "environment variable KUBETRIO_GC (gc): "
            'expected one of "default", "tuned", got "Tuned"',
        ),
        (
            {"KUBETRIO_KUBE_API_BURST": "0"},
            "environment variable KUBETRIO_KUBE_API_BURST (client.burst): expected int >= 1, got 0",
        ),
        (
            {"KUBETRIO_CONTROLLERS": "x"},
            'environment variable KUBETRIO_CONTROLLERS (controllers): unknown controller "x"',
        ),
    ],
)
def test_environment_errors_name_the_variable(env: dict[str, str], expected: str) -> None:
    assert error_of([], env).startswith(expected)


def test_a_flag_fixes_a_bad_variable_only_by_overriding_it() -> None:
    env = {"KUBETRIO_MACHINE_DRAIN_TIMEOUT": "soon"}
    assert "KUBETRIO_MACHINE_DRAIN_TIMEOUT" in error_of([], env)
    # A bad variable is an error even when a flag overrides it: the operator should know.
    assert "KUBETRIO_MACHINE_DRAIN_TIMEOUT" in error_of(["--machine-drain-timeout", "1h"], env)


def test_unrelated_variables_are_ignored() -> None:
    assert load([], {"KUBETRIO_CI": "1", "KUBETRIO_SOMETHING_ELSE": "x"}) == load()


def test_blame_goes_to_the_setting_the_operator_changed(tmp_path: Path) -> None:
    path = write(tmp_path, "leaderElection: {leaseDuration: 30s, renewDeadline: 20s}\n")
    message = error_of(["--config", path, "--leader-elect-renew-deadline", "40s"])
    assert message == (
        "flag --leader-elect-renew-deadline (leaderElection.renewDeadline): must be less than "
        "leaderElection.leaseDuration (30s), got 40s"
    )


# --- durations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("15s", 15),
        ("2m", 120),
        ("1h30m", 5400),
        ("100ms", 0.1),
        ("1.5s", 1.5),
        ("1h0m0s", 3600),
        ("250us", 0.00025),
        ("0", 0),
        ("30", 30),
        (" 10s ", 10),
        (45, 45),
        (2.5, 2.5),
    ],
)
def test_duration_parse(value: object, seconds: float) -> None:
    assert Duration.parse(value) == pytest.approx(seconds)


NOT_FINITE = [float("inf"), float("nan"), "9" * 400, "9" * 400 + "h"]


@pytest.mark.parametrize(
    "value",
    ["", "abc", "15x", "s", "-5s", "1h 30m", "1d", True, None, -1, *NOT_FINITE],
)
def test_duration_parse_rejects(value: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        Duration.parse(value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (15, "15s"),
        (90, "1m30s"),
        (3600, "1h"),
        (5400, "1h30m"),
        (0.1, "100ms"),
        (1.5, "1.5s"),
        (7261, "2h1m1s"),
        (0.00025, "250us"),
    ],
)
def test_duration_prints_go_style_and_parses_back(seconds: float, text: str) -> None:
    assert str(Duration(seconds)) == text
    assert Duration.parse(text) == pytest.approx(seconds)
    assert repr(Duration(seconds)) == f"Duration({text!r})"


def test_dump_is_plain_data() -> None:
    dumped = config_to_dict(load(["--leader-elect"]))
    assert msgspec.json.decode(msgspec.json.encode(dumped)) == dumped
    assert re.fullmatch(r"\d+[hms]", dumped["gracefulShutdownTimeout"])
    assert dumped["leaderElection"]["enabled"] is True


def test_metrics_per_machine_layers(tmp_path: Path) -> None:
    assert load([]).machine.metrics_per_machine is True
    path = write(tmp_path, "machine: {metricsPerMachine: false}\n")
    assert load(["--config", path]).machine.metrics_per_machine is False
    assert load(["--config", path, "--metrics-per-machine"]).machine.metrics_per_machine is True
    env = {"KUBETRIO_METRICS_PER_MACHINE": "false"}
    assert load([], env).machine.metrics_per_machine is False
