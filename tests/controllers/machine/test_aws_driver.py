"""The ``aws`` driver against moto's EC2 server over HTTP: every driver call, provider-aws's
semantics for each, and EC2's error codes mapped as provider-aws maps them (scripted by a
fault proxy in front of moto)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver import Code, DriverRegistry, MachineError
from kubetrio.controllers.machine.driver.aws.clients import Clients
from kubetrio.controllers.machine.driver.aws.driver import AwsDriver, decode_provider_id
from kubetrio.controllers.machine.driver.aws.register import register_aws
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics
from tests.helpers.ec2 import (
    SECRET,
    FaultProxy,
    MotoEc2,
    new_cluster,
)


def machine_class(spec: dict[str, Any], name: str = "aws-small") -> MachineClass:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "provider": "aws",
            "providerSpec": spec,
            "secretRef": {"name": f"{name}-secret", "namespace": "default"},
        },
        MachineClass,
    )


def machine(name: str, provider_id: str = "", annotations: dict[str, str] | None = None) -> Machine:
    spec: dict[str, Any] = {"class": {"kind": "MachineClass", "name": "aws-small"}}
    if provider_id:
        spec["providerID"] = provider_id
    if annotations:
        spec["nodeTemplate"] = {"metadata": {"annotations": annotations}}
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"}, "spec": spec}, Machine
    )


def driver_for(url: str, metrics: ProviderMetrics | None = None) -> AwsDriver:
    return AwsDriver(Clients(endpoint_url=url, metrics=metrics))


async def test_create_status_list_delete(moto_ec2: MotoEc2) -> None:
    cluster = new_cluster()
    metrics = ProviderMetrics(CollectorRegistry())
    driver = driver_for(moto_ec2.url, metrics)
    cls = machine_class(
        moto_ec2.provider_spec(
            cluster,
            tags={
                f"kubernetes.io/cluster/{cluster}": "1",
                "kubernetes.io/role/node": "1",
                "Name": "ignored",
                "team": "infra",
            },
        )
    )

    with pytest.raises(MachineError) as missing:
        await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert missing.value.code is Code.NotFound
    assert missing.value.message == "No ProviderID found on the machine"

    created = await driver.create_machine(machine("m-1"), cls, SECRET)
    region, instance_id = decode_provider_id(created.provider_id)
    assert created.provider_id == f"aws:///{moto_ec2.region}/{instance_id}"
    assert region == moto_ec2.region and instance_id.startswith("i-")
    [instance] = moto_ec2.instances(cluster)
    assert created.node_name == instance["PrivateDnsName"] != ""
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags["Name"] == "m-1" and tags["team"] == "infra"  # Name is the machine's, always
    assert instance["ImageId"] == moto_ec2.ami and instance["InstanceType"] == "m5.large"
    attribute = moto_ec2.client().describe_instance_attribute(
        InstanceId=instance_id, Attribute="userData"
    )
    assert base64.b64decode(attribute["UserData"]["Value"]) == SECRET["userData"]

    status = await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert (status.provider_id, status.node_name) == (created.provider_id, created.node_name)
    # Found by providerID too, when the tags no longer say whose it is.
    by_id = await driver.get_machine_status(machine("renamed", created.provider_id), cls, SECRET)
    assert by_id.provider_id == created.provider_id

    assert await driver.list_machines(cls, SECRET) == {created.provider_id: "m-1"}
    initialized = await driver.initialize_machine(machine("m-1"), cls, SECRET)
    assert initialized.provider_id == created.provider_id

    assert await driver.delete_machine(machine("m-1", created.provider_id), cls, SECRET) == ""
    assert await driver.list_machines(cls, SECRET) == {}
    with pytest.raises(MachineError) as gone:
        await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert gone.value.code is Code.NotFound
    # By providerID EC2 still shows the terminated instance for a while, and provider-aws
    # answers it as the machine's VM: the deletion flow does not ask again.
    await driver.get_machine_status(machine("m-1", created.provider_id), cls, SECRET)
    # A machine whose instance never existed is deleted at once.
    assert await driver.delete_machine(machine("m-2"), cls, SECRET) == ""

    calls = {
        sample.labels["service"]: sample.value
        for sample in metrics.requests.collect()[0].samples
        if sample.name.endswith("_total") and sample.labels["provider"] == "aws"
    }
    assert calls["RunInstances"] == 1 and calls["TerminateInstances"] == 1
    assert calls["DescribeImages"] == 1


async def test_delete_without_provider_id_finds_instances_by_tags(moto_ec2: MotoEc2) -> None:
    cluster = new_cluster()
    driver = driver_for(moto_ec2.url)
    cls = machine_class(moto_ec2.provider_spec(cluster))
    await driver.create_machine(machine("m-1"), cls, SECRET)
    await driver.create_machine(machine("m-1"), cls, SECRET)  # a duplicate, as after a lost answer
    with pytest.raises(MachineError) as twice:
        await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert twice.value.code is Code.OutOfRange
    assert twice.value.message.startswith(
        "AWS plugin is returning multiple VM instances backing this machine object. "
        "IDs for all backing VMs - [i-"
    )
    await driver.delete_machine(machine("m-1"), cls, SECRET)
    states = {i["State"]["Name"] for i in moto_ec2.instances(cluster)}
    assert states <= {"shutting-down", "terminated"}


async def test_list_keeps_to_the_class_cluster(moto_ec2: MotoEc2) -> None:
    ours, theirs = new_cluster(), new_cluster()
    driver = driver_for(moto_ec2.url)
    mine = await driver.create_machine(
        machine("a"), machine_class(moto_ec2.provider_spec(ours)), SECRET
    )
    await driver.create_machine(machine("b"), machine_class(moto_ec2.provider_spec(theirs)), SECRET)
    listed = await driver.list_machines(machine_class(moto_ec2.provider_spec(ours)), SECRET)
    assert listed == {mine.provider_id: "a"}


async def test_block_devices_interfaces_and_options_reach_ec2(moto_ec2: MotoEc2) -> None:
    cluster = new_cluster()
    driver = driver_for(moto_ec2.url)
    spec = moto_ec2.provider_spec(
        cluster,
        blockDevices=[
            {"deviceName": "/root", "ebs": {"volumeSize": 40, "volumeType": "gp3"}},
            {
                "deviceName": "/dev/sdb",
                "ebs": {"volumeSize": 100, "volumeType": "gp2", "deleteOnTermination": False},
            },
        ],
        instanceMetadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 2},
        srcAndDstChecksEnabled=False,
    )
    cls = machine_class(spec)
    created = await driver.create_machine(machine("m-1"), cls, SECRET)
    _, instance_id = decode_provider_id(created.provider_id)
    [instance] = moto_ec2.instances(cluster)
    devices = {d["DeviceName"]: d["Ebs"] for d in instance["BlockDeviceMappings"]}
    assert set(devices) == {"/dev/sda1", "/dev/sdb"}  # /root is the AMI's root device
    assert instance["MetadataOptions"]["HttpTokens"] == "required"
    volumes = moto_ec2.client().describe_volumes(
        Filters=[{"Name": "attachment.instance-id", "Values": [instance_id]}]
    )["Volumes"]
    assert sorted(v["Size"] for v in volumes) == [40, 100]

    # Source/destination checks still on: status says Uninitialized; initialize turns them off.
    with pytest.raises(MachineError) as uninitialized:
        await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert uninitialized.value.code is Code.Uninitialized
    assert "has SourceDestCheck=true on a non-EFA interface despite" in uninitialized.value.message
    await driver.initialize_machine(machine("m-1"), cls, SECRET)
    status = await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert status.provider_id == created.provider_id


async def test_placement_from_the_machine_annotation(moto_ec2: MotoEc2) -> None:
    cluster = new_cluster()
    driver = driver_for(moto_ec2.url)
    cls = machine_class(moto_ec2.provider_spec(cluster))
    placement = json.dumps({"availabilityZone": moto_ec2.zone, "tenancy": "dedicated"})
    annotated = machine("m-1", annotations={"machine.sapcloud.io/awsPlacement": placement})
    await driver.create_machine(annotated, cls, SECRET)
    [instance] = moto_ec2.instances(cluster)
    assert instance["Placement"]["AvailabilityZone"] == moto_ec2.zone


async def test_unknown_image_is_internal(moto_ec2: MotoEc2) -> None:
    driver = driver_for(moto_ec2.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster(), ami="ami-00000000"))
    with pytest.raises(MachineError) as refused:
        await driver.create_machine(machine("m-1"), cls, SECRET)
    assert refused.value.code is Code.Internal
    assert "InvalidAMIID.NotFound" in refused.value.message


@pytest.mark.parametrize(
    ("ec2_code", "code"),
    [
        ("InsufficientInstanceCapacity", Code.ResourceExhausted),
        ("InsufficientCapacity", Code.ResourceExhausted),
        ("InsufficientAddressCapacity", Code.ResourceExhausted),
        ("InsufficientVolumeCapacity", Code.ResourceExhausted),
        ("InstanceLimitExceeded", Code.ResourceExhausted),
        ("VcpuLimitExceeded", Code.ResourceExhausted),
        ("VolumeLimitExceeded", Code.ResourceExhausted),
        ("MaxIOPSLimitExceeded", Code.ResourceExhausted),
        ("RouteLimitExceeded", Code.ResourceExhausted),
        ("Unsupported", Code.ResourceExhausted),
        ("UnauthorizedOperation", Code.Internal),
        ("AuthFailure", Code.Internal),
        ("InvalidParameterValue", Code.Internal),
    ],
)
async def test_run_instances_errors_map_as_provider_aws(
    moto_ec2: MotoEc2, fault_proxy: FaultProxy, ec2_code: str, code: Code
) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    fault_proxy.fail("RunInstances", ec2_code)
    with pytest.raises(MachineError) as refused:
        await driver.create_machine(machine("m-1"), cls, SECRET)
    assert refused.value.code is code
    assert refused.value.message == (
        f"An error occurred ({ec2_code}) when calling the RunInstances operation: "
        "scripted by the test"
    )


async def test_throttling_and_5xx_are_retried_then_internal(
    moto_ec2: MotoEc2, fault_proxy: FaultProxy
) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    fault_proxy.fail("RunInstances", "RequestLimitExceeded", status=503, times=2)
    created = await driver.create_machine(machine("m-1"), cls, SECRET)  # the third try passes
    assert created.provider_id.startswith("aws:///")
    assert fault_proxy.actions.count("RunInstances") == 3
    fault_proxy.fail("TerminateInstances", "InternalError", status=500, times=3)
    with pytest.raises(MachineError) as refused:
        await driver.delete_machine(machine("m-1", created.provider_id), cls, SECRET)
    assert refused.value.code is Code.Internal
    assert "InternalError" in refused.value.message
    assert fault_proxy.actions.count("TerminateInstances") == 3  # aws-sdk-go-v2's attempts


async def test_terminate_not_found_is_done(moto_ec2: MotoEc2, fault_proxy: FaultProxy) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    fault_proxy.fail("TerminateInstances", "InvalidInstanceID.NotFound")
    assert await driver.delete_machine(machine("m-1", "aws:///eu-west-1/i-0abc"), cls, SECRET) == ""


async def test_describe_failure_on_status_is_internal(
    moto_ec2: MotoEc2, fault_proxy: FaultProxy
) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    fault_proxy.fail("DescribeInstances", "UnauthorizedOperation", status=403)
    with pytest.raises(MachineError) as refused:
        await driver.get_machine_status(machine("m-1"), cls, SECRET)
    assert refused.value.code is Code.Internal


async def test_a_hanging_call_is_abandoned_when_cancelled(
    moto_ec2: MotoEc2, fault_proxy: FaultProxy
) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    await driver.list_machines(cls, SECRET)  # the client made, the model loaded
    fault_proxy.latency["DescribeInstances"] = 30.0
    started = time.monotonic()
    with trio.move_on_after(0.2) as scope:
        await driver.list_machines(cls, SECRET)
    assert scope.cancelled_caught
    assert time.monotonic() - started < 5  # not the 30 s EC2 takes: the thread is left behind


async def test_one_client_per_region_and_credential(moto_ec2: MotoEc2) -> None:
    clients = Clients(endpoint_url=moto_ec2.url)
    first = await clients.ec2("eu-west-1", SECRET)
    assert await clients.ec2("eu-west-1", dict(SECRET)) is first
    assert await clients.ec2("us-east-1", SECRET) is not first
    rotated = {**SECRET, "providerSecretAccessKey": b"rotated"}
    assert await clients.ec2("eu-west-1", rotated) is not first


async def test_workload_identity_assumes_the_role(moto_ec2: MotoEc2, tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text("a-projected-service-account-token")
    secret = {
        "workloadIdentityTokenFile": str(token).encode(),
        "roleARN": b"arn:aws:iam::123456789012:role/machines",
        "userData": b"#!/bin/sh\n",
    }
    cluster = new_cluster()
    driver = driver_for(moto_ec2.url)
    created = await driver.create_machine(
        machine("m-1"), machine_class(moto_ec2.provider_spec(cluster)), secret
    )
    assert created.provider_id.startswith("aws:///")


def test_registered_under_both_names() -> None:
    registry = DriverRegistry()
    driver = register_aws(registry)
    assert registry.get("aws") is driver and registry.get("AWS") is driver


async def test_volume_ids_from_ebs_and_csi() -> None:
    pvs = [
        msgspec.convert({"metadata": {"name": n}, "spec": spec}, PersistentVolume)
        for n, spec in [
            ("intree-zone", {"awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-1"}}),
            ("intree-bare", {"awsElasticBlockStore": {"volumeID": "vol-2"}}),
            ("intree-short", {"awsElasticBlockStore": {"volumeID": "aws:///vol-3"}}),
            ("intree-bad", {"awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/disk-4"}}),
            ("csi", {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-5"}}),
            ("other-csi", {"csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": "x"}}),
        ]
    ]
    assert await driver_for("http://unused").get_volume_ids(pvs) == {
        "intree-zone": "vol-1",
        "intree-bare": "vol-2",
        "intree-short": "vol-3",
        "csi": "vol-5",
    }


async def test_lookups_of_missing_instances_as_provider_aws(moto_ec2: MotoEc2) -> None:
    driver = driver_for(moto_ec2.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    unknown = machine("m-1", "aws:///eu-west-1/i-00000000000000000")
    with pytest.raises(MachineError) as gone:
        await driver.get_machine_status(unknown, cls, SECRET)
    assert str(gone.value) == (
        "machine codes error: code = [NotFound] message = [AWS plugin is returning no VM "
        "instances backing this machine object]"
    )
    with pytest.raises(MachineError) as uninitialized:
        await driver.initialize_machine(machine("m-1"), cls, SECRET)
    assert str(uninitialized.value) == (
        "machine codes error: code = [Uninitialized] message = [machine codes error: code = "
        "[NotFound] message = [No ProviderID found on the machine]]"
    )
    with pytest.raises(MachineError) as undecodable:
        await driver.delete_machine(machine("m-1", "i-0abc"), cls, SECRET)
    assert str(undecodable.value) == (
        "machine codes error: code = [InvalidArgument] message = [unable to decode provider-ID]"
    )


async def test_create_waits_until_ec2_shows_the_new_instance(
    moto_ec2: MotoEc2, fault_proxy: FaultProxy, mock_clock: trio.testing.MockClock
) -> None:
    driver = driver_for(fault_proxy.url)
    cls = machine_class(moto_ec2.provider_spec(new_cluster()))
    # EC2 is eventually consistent: right after RunInstances the instance may be unknown.
    fault_proxy.fail("DescribeInstances", "InvalidInstanceID.NotFound", times=2)
    started = trio.current_time()
    created = await driver.create_machine(machine("m-1"), cls, SECRET)
    assert created.node_name
    assert fault_proxy.actions.count("DescribeInstances") == 3
    assert 0.25 + 0.375 <= trio.current_time() - started <= 0.75 + 1.125 + 0.1  # the backoff
