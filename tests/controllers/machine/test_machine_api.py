"""Machine and MachineClass views decode MCM's own manifests; Go durations parse as Go does."""

from __future__ import annotations

import msgspec
import pytest

from kubetrio.api.machine import (
    PHASE_RUNNING,
    STATE_SUCCESSFUL,
    Machine,
    MachineClass,
    format_duration,
    parse_duration,
)

MACHINE = {
    "apiVersion": "machine.sapcloud.io/v1alpha1",
    "kind": "Machine",
    "metadata": {"name": "shoot-worker-a-7c9f", "namespace": "shoot--dev", "labels": {"name": "d"}},
    "spec": {
        "class": {"kind": "MachineClass", "name": "worker-a"},
        "providerID": "sim://eu-1/vm-0001",
        "nodeTemplate": {
            "metadata": {"labels": {"pool": "a"}, "annotations": {"team": "x"}},
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        },
        "machineConfiguration": {
            "drainTimeout": "2h",
            "healthTimeout": "10m",
            "creationTimeout": "20m",
            "maxEvictRetries": 30,
            "nodeConditions": "KernelDeadlock, ReadonlyFilesystem,DiskPressure",
        },
    },
    "status": {
        "currentStatus": {
            "phase": "Running",
            "timeoutActive": False,
            "lastUpdateTime": "2026-11-23T10:00:00Z",
        },
        "lastOperation": {
            "description": "Machine shoot-worker-a-7c9f successfully joined the cluster",
            "state": "Successful",
            "type": "Create",
            "lastUpdateTime": "2026-11-23T10:00:00Z",
        },
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            {"type": "DiskPressure", "status": "False"},
        ],
        "lastKnownState": "",
        "node": "ip-10-0-0-1",
        "somethingNew": {"ignored": True},
    },
}

MACHINE_CLASS = {
    "apiVersion": "machine.sapcloud.io/v1alpha1",
    "kind": "MachineClass",
    "metadata": {"name": "worker-a", "namespace": "shoot--dev"},
    "provider": "sim",
    "providerSpec": {"region": "eu-1", "bootSeconds": 30, "failNext": {"create": {"count": 2}}},
    "secretRef": {"name": "cloud-config", "namespace": "shoot--dev"},
    "credentialsSecretRef": {"name": "creds", "namespace": "shoot--dev"},
    "nodeTemplate": {"capacity": {"cpu": "2"}, "instanceType": "m5.large"},
}


def test_machine_decodes_mcm_manifest() -> None:
    machine = msgspec.convert(MACHINE, Machine)
    assert machine.spec.class_.name == "worker-a"
    assert machine.spec.provider_id == "sim://eu-1/vm-0001"
    template = machine.spec.node_template
    assert template is not None
    assert template.metadata.labels == {"pool": "a"}
    assert template.spec.taints[0].key == "dedicated"
    config = machine.spec.machine_configuration
    assert config is not None
    assert config.max_evict_retries == 30
    assert config.node_condition_types() == ("KernelDeadlock", "ReadonlyFilesystem", "DiskPressure")
    assert parse_duration(config.drain_timeout or "") == 7200
    assert machine.phase == PHASE_RUNNING
    assert machine.status.last_operation.state == STATE_SUCCESSFUL
    assert machine.status.node == "ip-10-0-0-1"
    ready = machine.condition("Ready")
    assert ready is not None and ready.status == "True"


def test_machine_encodes_wire_names() -> None:
    machine = msgspec.convert(MACHINE, Machine)
    wire = msgspec.to_builtins(machine)
    assert wire["spec"]["class"] == {"kind": "MachineClass", "name": "worker-a"}
    assert wire["spec"]["providerID"] == "sim://eu-1/vm-0001"
    assert wire["status"]["currentStatus"]["phase"] == "Running"
    assert "class_" not in wire["spec"]


def test_empty_machine_has_defaults() -> None:
    machine = msgspec.convert({"metadata": {"name": "m"}}, Machine)
    assert machine.phase == ""
    assert machine.spec.machine_configuration is None
    assert machine.spec.class_.name == ""


def test_machine_class_decodes() -> None:
    cls = msgspec.convert(MACHINE_CLASS, MachineClass)
    assert cls.provider == "sim"
    assert cls.provider_spec["bootSeconds"] == 30
    assert cls.secret_ref is not None and cls.secret_ref.name == "cloud-config"
    assert cls.credentials_secret_ref is not None
    assert cls.node_template == {"capacity": {"cpu": "2"}, "instanceType": "m5.large"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2h", 7200),
        ("30m", 1800),
        ("90s", 90),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("500ms", 0.5),
        ("0", 0),
        ("-5s", -5),
        ("2h0m0s", 7200),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "2", "h", "2x", "1h 2m", "abc", "2h-1m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_format_duration_round_trips() -> None:
    for seconds in (7200, 1800, 90, 5, 0):
        assert parse_duration(format_duration(seconds)) == seconds
    assert format_duration(7200) == "2h0m0s"
