"""The simulated cloud reads its script from a providerSpec; bad fields are InvalidArgument
errors naming the field, never a crash of the emulator."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.sim.cloud import CODE_HTTP_STATUS, CloudError, VmScript
from kubetrio.sim.cloud.script import DEFAULT_CAPACITY, Failure, LaterCondition


def test_defaults() -> None:
    script = VmScript.parse(None)
    assert script.region == "sim-1"
    assert script.boot_seconds == 0
    assert not script.never_ready
    assert script.capacity == DEFAULT_CAPACITY
    assert script.fail_next == {}


def test_full_script() -> None:
    script = VmScript.parse(
        {
            "region": "eu-1",
            "bootSeconds": 12.5,
            "neverReady": True,
            "nodeName": "n",
            "capacity": {"cpu": 4},
            "conditionAfter": [
                {"type": "ReadonlyFilesystem", "status": "True", "afterSeconds": 600},
                {"type": "KernelDeadlock", "afterSeconds": 5},
            ],
            "failNext": {"create": {"code": "ResourceExhausted", "count": 2}, "delete": {}},
        }
    )
    assert script.boot_seconds == 12.5
    assert script.capacity == {"cpu": "4"}
    assert script.conditions_after == (
        LaterCondition("ReadonlyFilesystem", "True", 600.0),
        LaterCondition("KernelDeadlock", "True", 5.0),
    )
    assert script.fail_next == {
        "create": Failure("ResourceExhausted", 2),
        "delete": Failure("Internal", 1),
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ([], "providerSpec"),
        ({"bootSeconds": -1}, "providerSpec.bootSeconds"),
        ({"bootSeconds": True}, "providerSpec.bootSeconds"),
        ({"neverReady": "yes"}, "providerSpec.neverReady"),
        ({"capacity": "big"}, "providerSpec.capacity"),
        ({"failNext": {"reboot": {}}}, "providerSpec.failNext.reboot"),
        ({"failNext": {"create": {"code": "Nope"}}}, "providerSpec.failNext.create.code"),
        ({"failNext": {"create": {"count": -2}}}, "providerSpec.failNext.create.count"),
        ({"conditionAfter": {"status": "True"}}, "providerSpec.conditionAfter[0]"),
        (
            {"conditionAfter": {"type": "X", "status": "Maybe"}},
            "providerSpec.conditionAfter[0].status",
        ),
    ],
)
def test_invalid_fields_are_named(spec: Any, field: str) -> None:
    with pytest.raises(CloudError) as info:
        VmScript.parse(spec)
    assert info.value.code == "InvalidArgument"
    assert info.value.message.startswith(field + ":")
    assert info.value.http_status == 400


def test_error_body_is_a_status() -> None:
    error = CloudError("ResourceExhausted", "no capacity")
    assert error.body()["reason"] == "ResourceExhausted"
    assert error.body()["code"] == 429
    assert len(CODE_HTTP_STATUS) == 17  # every MCM code but OK
    with pytest.raises(ValueError, match="unknown machine code"):
        CloudError("Bogus", "x")


def test_node_template_shapes_the_vm_and_the_provider_spec_wins() -> None:
    template = {
        "capacity": {"cpu": 8, "gpu": "0", "memory": "32Gi"},
        "instanceType": "sim.large",
        "region": "eu-2",
        "zone": "eu-2a",
        "architecture": "arm64",
    }
    script = VmScript.parse({"region": "eu-1"}, template)
    assert (script.instance_type, script.node_region, script.zone) == ("sim.large", "eu-2", "eu-2a")
    assert script.architecture == "arm64" and script.region == "eu-1"
    assert script.capacity == {**DEFAULT_CAPACITY, "cpu": "8", "memory": "32Gi"}  # no zero gpu
    gpu = VmScript.parse({}, {**template, "capacity": {"gpu": 2}})
    assert gpu.capacity["nvidia.com/gpu"] == "2"
    explicit = VmScript.parse({"instanceType": "sim.tiny", "capacity": {"cpu": 1}}, template)
    assert explicit.instance_type == "sim.tiny" and explicit.capacity == {"cpu": "1"}


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ("big", "nodeTemplate"),
        ({"capacity": 3}, "nodeTemplate.capacity"),
        ({"zone": 1}, "nodeTemplate.zone"),
    ],
)
def test_invalid_node_template_fields_are_named(template: Any, field: str) -> None:
    with pytest.raises(CloudError) as info:
        VmScript.parse({}, template)
    assert info.value.code == "InvalidArgument"
    assert info.value.message.startswith(f"{field}:")
