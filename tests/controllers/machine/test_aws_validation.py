# ruff: noqa: E501  (provider-aws's messages are pinned whole, one per line)
"""provider-aws's validation messages, character for character (its core_test.go and
validation_test.go expectations), and refusals before any request reaches EC2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import kubetrio.config
from kubetrio.controllers.machine.driver import Code, MachineError
from kubetrio.controllers.machine.driver.aws.spec import decode_spec
from kubetrio.controllers.machine.driver.aws.validation import spec_problems, validate

SECRET = {
    "providerAccessKeyId": b"dummy-id",
    "providerSecretAccessKey": b"dummy-secret",
    "userData": b"dummy-user-data",
}


def spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "ami": "ami-123456789",
        "blockDevices": [{"ebs": {"volumeSize": 50, "volumeType": "gp2"}}],
        "iam": {"name": "test-iam"},
        "keyName": "test-ssh-publickey",
        "machineType": "m4.large",
        "networkInterfaces": [{"securityGroupIDs": ["sg-00002132323"], "subnetID": "subnet-1"}],
        "region": "eu-west-1",
        "tags": {"kubernetes.io/cluster/shoot--test": "1", "kubernetes.io/role/test": "1"},
    }
    base.update(overrides)
    return base


def refusal(raw: dict[str, Any], secret: dict[str, bytes] | None = SECRET) -> str:
    with pytest.raises(MachineError) as refused:
        validate(decode_spec(raw), secret)
    assert refused.value.code is Code.InvalidArgument
    return str(refused.value)


def problems(raw: dict[str, Any]) -> list[str]:
    return [str(p) for p in spec_problems(decode_spec(raw), SECRET)]


def test_a_valid_spec_passes() -> None:
    validate(decode_spec(spec()), SECRET)


def test_secret_messages_as_provider_aws() -> None:
    no_id = {k: v for k, v in SECRET.items() if k != "providerAccessKeyId"}
    assert refusal(spec(), no_id) == (
        "machine codes error: code = [InvalidArgument] message = [error while validating "
        "ProviderSpec secretRef.AWSAccessKeyID: Required value: Mention atleast "
        "providerAccessKeyId or accessKeyID]"
    )
    only_id = {"providerAccessKeyId": b"dummy-id"}
    assert refusal(spec(), only_id) == (
        "machine codes error: code = [InvalidArgument] message = [error while validating "
        "ProviderSpec [secretRef.AWSSecretAccessKey: Required value: Mention atleast "
        "providerSecretAccessKey or secretAccessKey, secretRef.userData: Required value: "
        "Mention userData]]"
    )
    alternative = {"accessKeyID": b"a", "secretAccessKey": b"b", "userData": b"u"}
    validate(decode_spec(spec()), alternative)
    assert refusal(spec(), None).endswith(
        "ProviderSpec secretRef.: Required value: secretRef is required]"
    )
    identity = {"workloadIdentityTokenFile": b"", "userData": b"u"}
    assert refusal(spec(), identity).endswith(
        "[secretRef.workloadIdentityTokenFile: Required value: Workload identity token file is "
        "required, secretRef.roleARN: Required value: Role ARN is required when workload "
        "identity is used]]"
    )


def test_missing_ami_and_region() -> None:
    assert refusal(spec(ami="", region="")) == (
        "machine codes error: code = [InvalidArgument] message = [error while validating "
        "ProviderSpec [providerSpec.ami: Required value: AMI is required, providerSpec.region: "
        "Required value: Region is required]]"
    )


def test_capacity_reservation_with_two_targets() -> None:
    raw = spec(
        capacityReservation={
            "capacityReservationId": "cr-1",
            "capacityReservationResourceGroupArn": "arn:x",
        }
    )
    assert refusal(raw) == (
        "machine codes error: code = [InvalidArgument] message = [error while validating "
        "ProviderSpec providerSpec.capacityReservation: Required value: "
        "CapacityReservationResourceGroupArn or CapacityReservationId are optional but only one "
        "should be used]"
    )
    preferred = spec(
        capacityReservation={
            "capacityReservationPreference": "open",
            "capacityReservationId": "cr-1",
        }
    )
    assert problems(preferred) == [
        "providerSpec.capacityReservation: Required value: CapacityReservationPreference cannot "
        "be set when also providing a CapacityReservationID or CapacityReservationResourceGroupArn"
    ]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"machineType": ""},
            ["providerSpec.machineType: Required value: MachineType is required"],
        ),
        (
            {"iam": {}},
            [
                'providerSpec.iam: Invalid value: api.AWSIAMProfileSpec{ARN:"", Name:""}: '
                "either IAM Name or ARN must be set"
            ],
        ),
        (
            {"tags": {"kubernetes.io/role/test": "1"}},
            [
                "providerSpec.tags.: Required value: Tag required of the form kubernetes.io/cluster/****"
            ],
        ),
        (
            {"tags": {}},
            [
                "providerSpec.tags.: Required value: Tag required of the form kubernetes.io/cluster/****",
                "providerSpec.tags.: Required value: Tag required of the form kubernetes.io/role/****",
            ],
        ),
        (
            {"networkInterfaces": []},
            [
                "providerSpec.networkInterfaces.: Required value: Mention at least one NetworkInterface"
            ],
        ),
        (
            {
                "networkInterfaces": [
                    {
                        "securityGroupIDs": ["sg-1", ""],
                        "deviceIndex": -1,
                        "networkCardIndex": -1,
                        "interfaceType": "fast",
                    }
                ]
            },
            [
                "providerSpec.networkInterfaces[0].subnetID: Required value: SubnetID is required",
                "providerSpec.networkInterfaces[0].securityGroupIDs: Required value: "
                "securityGroupIDs cannot be blank for networkInterface:0 securityGroupID:1",
                'providerSpec.networkInterfaces[0].interfaceType: Unsupported value: "fast": '
                'supported values: "interface", "efa", "efa-only"',
                "providerSpec.networkInterfaces[0].deviceIndex: Invalid value: -1: must be >= 0",
                "providerSpec.networkInterfaces[0].networkCardIndex: Invalid value: -1: must be >= 0",
            ],
        ),
        (
            {"networkInterfaces": [{"subnetID": "s"}]},
            [
                "providerSpec.networkInterfaces[0].securityGroupIDs: Required value: Mention at "
                "least one securityGroupID"
            ],
        ),
        (
            {
                "blockDevices": [
                    {"ebs": {"volumeType": "fast", "volumeSize": 0, "iops": -1, "throughput": 0}}
                ]
            },
            [
                "providerSpec.blockDevices[0].ebs.volumeType: Required value: Please mention a "
                "valid EBS volume type: [gp2 gp3 io1 st1 sc1 standard]",
                "providerSpec.blockDevices[0].ebs.volumeSize: Required value: Please mention a "
                "valid EBS volume size",
                "providerSpec.blockDevices[0].ebs.iops: Required value: Please mention a valid EBS "
                "volume iops",
                "providerSpec.blockDevices[0].ebs.throughput: Invalid value: 0: Throughput should "
                "be a positive value",
            ],
        ),
        (
            {"blockDevices": [{"ebs": {"volumeType": "io1", "volumeSize": 10}}]},
            [
                "providerSpec.blockDevices[0].ebs.iops: Required value: Please mention a valid EBS volume iops"
            ],
        ),
        (
            {
                "blockDevices": [
                    {"deviceName": "/dev/sdb", "ebs": {"volumeType": "gp2", "volumeSize": 10}},
                    {"deviceName": "/dev/sdb", "ebs": {"volumeType": "gp2", "volumeSize": 10}},
                    {"deviceName": "/data", "ebs": {"volumeType": "gp2", "volumeSize": 10}},
                ]
            },
            [
                'providerSpec.blockDevices[2].deviceName: Invalid value: "/data": Device name '
                "given: /data does not match the expected pattern (regex used for validation is "
                "'^/dev/(sd[a-z]|xvd[a-c][a-z]?)$')",
                "providerSpec.blockDevices: Required value: Only one device can be specified as root",
                "providerSpec.blockDevices: Required value: Device name '/dev/sdb' duplicated 2 "
                "times, DeviceName must be unique",
            ],
        ),
        (
            {
                "instanceMetadataOptions": {
                    "httpPutResponseHopLimit": 65,
                    "httpEndpoint": "on",
                    "httpTokens": "maybe",
                    "httpProtocolIpv6": "yes",
                }
            },
            [
                "providerSpec.instanceMetadata.httpPutResponseHopLimit: Invalid value: 65: Only "
                "values between 0 and 64, both included, are accepted",
                'providerSpec.instanceMetadata.httpEndpoint: Invalid value: "on": Accepted values: '
                "[disabled enabled]",
                'providerSpec.instanceMetadata.httpTokens: Invalid value: "maybe": Accepted values: '
                "[required optional]",
                'providerSpec.instanceMetadata.httpProtocolIpv6: Invalid value: "yes": Accepted '
                "values: [enabled disabled]",
            ],
        ),
        (
            {"cpuOptions": {"coreCount": 2}},
            [
                "providerSpec.cpuOptions.threadsPerCore: Required value: ThreadsPerCore is required when CoreCount is set"
            ],
        ),
        (
            {"cpuOptions": {"threadsPerCore": 2}},
            [
                "providerSpec.cpuOptions.coreCount: Required value: CoreCount is required when ThreadsPerCore is set"
            ],
        ),
        (
            {"cpuOptions": {"coreCount": 2, "threadsPerCore": 3, "amdSevSnp": "on"}},
            [
                'providerSpec.cpuOptions.amdSevSnp: Invalid value: "on": AmdSevSnp must be one of '
                "[enabled disabled]",
                "providerSpec.cpuOptions.threadsPerCore: Invalid value: 3: ThreadsPerCore must be 1 or 2",
            ],
        ),
        (
            {
                "placement": {
                    "tenancy": "shared",
                    "affinity": "any",
                    "hostId": "h-1",
                    "partitionNumber": 0,
                }
            },
            [
                'providerSpec.placement.tenancy: Unsupported value: "shared": supported values: '
                '"default", "dedicated", "host"',
                'providerSpec.placement.affinity: Unsupported value: "any": supported values: '
                '"default", "host"',
                'providerSpec.placement.hostId: Forbidden: hostId can only be set when tenancy is "host"',
                "providerSpec.placement.partitionNumber: Invalid value: 0: must be >= 1",
            ],
        ),
        (
            {"instanceMarketOptions": {"marketType": "invalid"}},
            [
                'providerSpec.instanceMarketOptions.marketType: Unsupported value: "invalid": '
                'supported values: "spot", "capacity-block", "interruptible-capacity-reservation"'
            ],
        ),
    ],
)
def test_field_messages_as_provider_aws(overrides: dict[str, Any], expected: list[str]) -> None:
    assert problems(spec(**overrides)) == expected


def test_a_spec_that_does_not_fit_is_internal() -> None:
    with pytest.raises(MachineError) as refused:
        decode_spec(spec(ami=7))
    assert refused.value.code is Code.Internal
    assert "$.ami" in refused.value.message


def test_the_shipped_sample_is_a_valid_class() -> None:
    sample = Path(kubetrio.config.__file__).parent / "samples" / "aws_machineclass.yaml"
    secret, machine_class, deployment = yaml.safe_load_all(sample.read_text())
    data = {k: v.encode() for k, v in secret["stringData"].items()}
    validate(decode_spec(machine_class["providerSpec"]), data)
    assert machine_class["provider"] == "aws"
    assert (
        deployment["spec"]["template"]["spec"]["class"]["name"] == machine_class["metadata"]["name"]
    )
