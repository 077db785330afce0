"""Pure rules of the machine controller: step markers, effective options, retry periods,
validation messages, meltdown counting, unhealthy-condition descriptions."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.api.machine import Machine, MachineClass, MachineCondition
from kubetrio.controllers.machine.failing import replacements_in_progress
from kubetrio.controllers.machine.health_check import conditions_differ, describe
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.retry import LongRetry, MediumRetry, ShortRetry
from kubetrio.controllers.machine.status import (
    DELETE_VOLUME_ATTACHMENTS,
    GET_VM_STATUS,
    INITIATE_DRAIN,
    INITIATE_VM_DELETION,
    deletion_step,
)
from kubetrio.controllers.machine.validation import validate_class, validate_machine


def machine(phase: str = "", **spec: Any) -> Machine:
    return msgspec.convert(
        {
            "metadata": {"name": "m", "namespace": "default"},
            "spec": {"class": {"kind": "MachineClass", "name": "c"}, **spec},
            "status": {"currentStatus": {"phase": phase}},
        },
        Machine,
    )


def test_the_step_is_the_marker_a_description_ends_with() -> None:
    assert deletion_step(GET_VM_STATUS) == GET_VM_STATUS
    assert deletion_step(f"Drain successful. {INITIATE_VM_DELETION}") == INITIATE_VM_DELETION
    # An error quoted inside mentions another step; the ending decides.
    quoted = (
        f"Drain failed due to - pod said '{INITIATE_VM_DELETION}'. Will retry. {INITIATE_DRAIN}"
    )
    assert deletion_step(quoted) == INITIATE_DRAIN
    # A marker elsewhere may be quoted user text: never a reason to jump ahead.
    assert deletion_step("invalid value 'Initiate machine object finalizer removal'!") is None
    assert deletion_step(f"Now: {DELETE_VOLUME_ATTACHMENTS}") == DELETE_VOLUME_ATTACHMENTS
    assert deletion_step("Machine m successfully joined the cluster") is None


def test_machine_configuration_overrides_the_flags() -> None:
    options = MachineOptions()
    effective = options.for_machine(
        machine(
            machineConfiguration={
                "drainTimeout": "30m",
                "healthTimeout": "1h30m",
                "maxEvictRetries": 3,
                "nodeConditions": "KernelDeadlock, DiskPressure",
            }
        )
    )
    assert effective.drain_timeout == 1800 and effective.health_timeout == 5400
    assert effective.creation_timeout == options.creation_timeout
    assert effective.max_evict_retries == 3
    assert effective.node_conditions == ("KernelDeadlock", "DiskPressure")
    assert options.for_machine(machine()) is options
    # Evictions every 20 s cannot outnumber what fits in the drain timeout.
    assert MachineOptions(drain_timeout=600, max_evict_retries=360).evict_retries == 30


def test_retry_periods_are_mcms() -> None:
    assert (ShortRetry, MediumRetry, LongRetry) == (5.0, 180.0, 600.0)


def test_validation_names_the_field() -> None:
    assert validate_machine(machine()) == []
    bad = machine(
        machineConfiguration={
            "creationTimeout": "0s",
            "healthTimeout": "30000000000h",
            "maxEvictRetries": -1,
        },
        nodeTemplate={
            "metadata": {"labels": {"bad key!": "x", "ok": "not ok!"}},
            "spec": {"taints": [{"key": "", "effect": "NoSchedule"}]},
        },
    )
    assert validate_machine(bad) == [
        "spec.machineConfiguration.healthTimeout: longer than Go's maximum duration "
        "(about 292 years)",
        "spec.machineConfiguration.creationTimeout: must be positive",
        "spec.machineConfiguration.maxEvictRetries: must not be negative",
        'spec.nodeTemplate.metadata.labels: invalid key "bad key!"',
        'spec.nodeTemplate.metadata.labels[ok]: invalid value "not ok!"',
        'spec.nodeTemplate.spec.taints[0].key: invalid key ""',
    ]
    no_class = msgspec.convert(
        {"metadata": {"name": "m"}, "spec": {"class": {"kind": "Other"}}}, Machine
    )
    assert validate_machine(no_class) == [
        "spec.class.name: required",
        'spec.class.kind: "Other" is not MachineClass',
    ]
    wrong = msgspec.convert(
        {"metadata": {"name": "c"}, "provider": "aws", "nodeTemplate": {"capacity": "lots"}},
        MachineClass,
    )
    problems = validate_class(wrong, ["sim"])
    assert problems[0] == 'provider: no machine driver for "aws" (known: sim)'
    assert problems[1] == "nodeTemplate: Expected `object`, got `str` - at `$.capacity`"
    assert validate_class(wrong, ["aws"], provider_only=True) == []  # enough to delete


def test_class_node_template_is_validated_as_mcm_does() -> None:
    """MCM's validateNodeTemplate: one error per missing cpu/gpu/memory capacity, one for an
    empty instance type, region or zone, printed as Go prints a slice of errors."""

    def problems(template: dict[str, object]) -> list[str]:
        cls = msgspec.convert(
            {"metadata": {"name": "c"}, "provider": "sim", "nodeTemplate": template}, MachineClass
        )
        return validate_class(cls, ["sim"])

    capacity = (
        "MachineClass NodeTemplate Capacity should mandatorily have CPU, GPU and Memory configured"
    )
    placement = "MachineClass NodeTemplate Instance Type, region and zone cannot be empty"
    assert problems({}) == [f"[{capacity} {capacity} {capacity} {placement}]"]
    complete = {
        "capacity": {"cpu": 4, "gpu": "0", "memory": "16Gi"},
        "instanceType": "sim.large",
        "region": "eu-1",
        "zone": "eu-1a",
    }
    assert problems(complete) == []
    assert problems({**complete, "capacity": {"cpu": 4, "memory": "16Gi"}}) == [f"[{capacity}]"]
    assert problems({**complete, "region": ""}) == [f"[{placement}]"]


def test_replacements_in_progress_counts_like_mcm() -> None:
    phases = ["Running", "Unknown", "Pending", "Failed", "Terminating", "CrashLoopBackOff"]
    assert replacements_in_progress([machine(p) for p in phases]) == 1 + 1 + 2 + 1
    assert replacements_in_progress([machine("Running"), machine("Unknown")]) == 0


def condition(kind: str, status: str, heartbeat: str = "") -> MachineCondition:
    return MachineCondition(type=kind, status=status, last_heartbeat_time=heartbeat or None)


def test_only_status_changes_count_and_only_bad_conditions_are_named() -> None:
    before = (condition("Ready", "True", "t1"), condition("DiskPressure", "False"))
    heartbeat = (condition("Ready", "True", "t2"), condition("DiskPressure", "False"))
    assert not conditions_differ(before, heartbeat)
    assert conditions_differ(
        before, (condition("Ready", "False"), condition("DiskPressure", "False"))
    )
    assert conditions_differ(before, before[:1])
    watched = ("DiskPressure", "KernelDeadlock")
    mixed = (
        condition("Ready", "False"),
        condition("DiskPressure", "False"),
        condition("KernelDeadlock", "Unknown"),
    )
    assert describe(mixed, watched) == "Ready=False, KernelDeadlock=Unknown"
    assert describe((), watched) == "Ready missing"
