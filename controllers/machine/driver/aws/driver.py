"""The ``aws`` driver: MCM's provider-aws (``pkg/aws/core.go``) on boto3.

Each call reads and validates the class's provider spec and secret first (a bad class never
reaches EC2), then talks to the class's region with the class's credentials. A VM is an EC2
instance tagged ``Name=<machine>`` plus the class's tags; its providerID is
``aws:///<region>/<instance-id>`` and its Node name the instance's private DNS name, as with
provider-aws, so machines created by MCM are found by kubetrio and the other way round.

Creation is idempotent per machine name together with the controller: it asks
``get_machine_status`` (by the Name tag, then the providerID) before ``create_machine``, and after
``RunInstances`` this driver waits until EC2 shows the new instance (EC2 is eventually
consistent), so the next status finds it rather than creating a second one. Should two ever
exist, status answers ``OutOfRange`` and the orphan sweep (``list_machines``) removes the
spare.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

import trio

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver.aws import errors
from kubetrio.controllers.machine.driver.aws.clients import Clients, Ec2
from kubetrio.controllers.machine.driver.aws.spec import (
    ROOT_DEVICE_NAME,
    AwsProviderSpec,
    BlockDeviceSpec,
    decode_spec,
)
from kubetrio.controllers.machine.driver.aws.validation import USER_DATA, validate
from kubetrio.controllers.machine.driver.aws.volumes import volume_ids
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.driver import CreateResult, SecretData, StatusResult
from kubetrio.runtime.util.gotext import go_quote

PLACEMENT_ANNOTATION = "machine.sapcloud.io/awsPlacement"
# Instances in these states still back a machine; terminated and shutting-down ones do not.
LIVE_STATES = ("pending", "running", "stopping", "stopped")
NOT_BACKED = "AWS plugin is returning no VM instances backing this machine object"
# How long create waits for a new instance to show in DescribeInstances (provider-aws: 5 min,
# cenkalti/backoff's defaults: from 0.5 s, times 1.5, at most 60 s apart, ±50 %).
CONSISTENCY_WAIT = 300.0
_EFA = ("efa", "efa-only")


def encode_provider_id(region: str, instance_id: str) -> str:
    return f"aws:///{region}/{instance_id}"


def decode_provider_id(provider_id: str) -> tuple[str, str]:
    """(region, instance ID): the last two parts of the ID, as provider-aws reads it."""
    parts = provider_id.split("/")
    if len(parts) < 2:
        raise MachineError(Code.InvalidArgument, "unable to decode provider-ID")
    return parts[-2], parts[-1]


def _instances(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for r in answer.get("Reservations", ()) for i in r.get("Instances", ())]


class AwsDriver:
    """Implements ``Driver`` against EC2 (or anything that speaks its API at ``clients``'
    endpoint)."""

    def __init__(self, clients: Clients | None = None) -> None:
        self.clients = clients or Clients()

    async def _open(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> tuple[AwsProviderSpec, Ec2]:
        spec = decode_spec(machine_class.provider_spec)
        validate(spec, secret_data)
        try:
            ec2 = await self.clients.ec2(spec.region, secret_data)
        except Exception as error:  # a bad region or endpoint: botocore's own errors
            raise MachineError(Code.Internal, str(error)) from None
        return spec, ec2

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        spec, ec2 = await self._open(machine_class, secret_data)
        if USER_DATA not in secret_data:
            raise MachineError(Code.Internal, "userData doesn't exist")
        try:
            images = await ec2.call("DescribeImages", ImageIds=[spec.ami])
        except errors.AwsError as error:
            raise MachineError(errors.create_code(error), errors.message(error)) from None
        if not images.get("Images"):
            raise MachineError(Code.NotFound, f"Image {spec.ami} not found")
        request = run_instances_request(
            spec, machine, images["Images"][0].get("RootDeviceName"), secret_data[USER_DATA]
        )
        try:
            ran = await ec2.call("RunInstances", **request)
        except errors.AwsError as error:
            raise MachineError(errors.create_code(error), errors.message(error)) from None
        instance_id = next(
            (i["InstanceId"] for i in ran.get("Instances", ()) if i.get("InstanceId")), ""
        )
        if not instance_id:
            raise MachineError(
                Code.Internal,
                f"creation of VM failed for machine {go_quote(machine.name)} - no non-empty "
                "instanceID found in runResult",
            )
        provider_id = encode_provider_id(spec.region, instance_id)
        instance = await self._await_visible(ec2, instance_id, provider_id)
        node_name = instance.get("PrivateDnsName") or ""
        if not node_name:
            raise MachineError(
                Code.Internal,
                f"VM with Provider-ID {go_quote(provider_id)}, for machine "
                f"{go_quote(machine.name)} does not yet have a nodeName (instance.PrivateDnsName)",
            )
        return CreateResult(provider_id=provider_id, node_name=node_name)

    async def _await_visible(self, ec2: Ec2, instance_id: str, provider_id: str) -> dict[str, Any]:
        """The new instance once DescribeInstances shows it, retried with provider-aws's backoff;
        ``Internal`` when it never does (a second VM may then be made; the sweep removes it)."""
        deadline = trio.current_time() + CONSISTENCY_WAIT
        interval = 0.5
        while True:
            try:
                found = _instances(await _by_id(ec2, instance_id))
                if found:
                    return found[0]
            except MachineError:
                pass
            pause = min(interval * random.uniform(0.5, 1.5), 60.0)
            if trio.current_time() + pause > deadline:
                raise MachineError(
                    Code.Internal,
                    f"creation of VM {go_quote(provider_id)} failed, timed out waiting for "
                    "eventual consistency. Multiple VMs backing machine obj might spawn, they "
                    "will be orphan collected",
                )
            await trio.sleep(pause)
            interval *= 1.5

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        """provider-aws's one-time set-up: source/destination checks off (NAT instances) and the
        IPv6 prefixes the spec asks for. Any failure is ``Uninitialized``, so it is retried."""
        spec, ec2 = await self._open(machine_class, secret_data)
        try:
            instances = await _matching(ec2, machine, spec)
        except MachineError as error:
            if error.code == Code.NotFound:
                raise MachineError(Code.Uninitialized, str(error)) from None
            raise
        target = instances[0]
        instance_id = target.get("InstanceId", "")
        provider_id = encode_provider_id(spec.region, instance_id)
        try:
            if spec.src_and_dst_checks_enabled is False and target.get("SourceDestCheck", True):
                await _disable_source_dest_check(ec2, instance_id)
            for nic, wanted, have in _prefix_shortfalls(spec, target):
                await ec2.call(
                    "AssignIpv6Addresses", NetworkInterfaceId=nic, Ipv6PrefixCount=wanted - have
                )
        except errors.AwsError as error:
            raise MachineError(Code.Uninitialized, errors.message(error)) from None
        return StatusResult(provider_id=provider_id, node_name=target.get("PrivateDnsName", ""))

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        """Terminate the machine's instance (its EBS volumes and network interfaces go with it:
        provider-aws creates them delete-on-termination unless the spec says otherwise). An
        instance EC2 no longer knows counts as terminated."""
        spec, ec2 = await self._open(machine_class, secret_data)
        if machine.spec.provider_id:
            _, instance_id = decode_provider_id(machine.spec.provider_id)
            await _terminate(ec2, instance_id)
            return ""
        try:
            instances = await _by_tags(ec2, machine.name, spec)
        except MachineError as error:
            if error.code == Code.NotFound:
                return ""
            raise
        for instance in instances:
            await _terminate(ec2, instance.get("InstanceId", ""))
        return ""

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        spec, ec2 = await self._open(machine_class, secret_data)
        instances = await _matching(ec2, machine, spec)
        if len(instances) > 1:
            ids = " ".join(i.get("InstanceId", "") for i in instances)
            raise MachineError(
                Code.OutOfRange,
                "AWS plugin is returning multiple VM instances backing this machine object. "
                f"IDs for all backing VMs - [{ids}] ",
            )
        instance = instances[0]
        instance_id = instance.get("InstanceId", "")
        if spec.src_and_dst_checks_enabled is False and any(
            nic.get("InterfaceType") not in _EFA and nic.get("SourceDestCheck") is True
            for nic in instance.get("NetworkInterfaces", ())
        ):
            raise MachineError(
                Code.Uninitialized,
                f"VM {go_quote(instance_id)} associated with machine {go_quote(machine.name)} has "
                "SourceDestCheck=true on a non-EFA interface despite "
                "providerSpec.SrcAndDstChecksEnabled=false",
            )
        for nic, wanted, _have in _prefix_shortfalls(spec, instance):
            index = _device_index(spec, instance, nic)
            raise MachineError(
                Code.Uninitialized,
                f"VM {go_quote(instance_id)} associated with machine {go_quote(machine.name)} has "
                f"no ipv6 prefixes assigned on network interface {go_quote(nic)} despite "
                f"providerSpec.NetworkInterfaces[{index}].Ipv6PrefixCount={wanted}",
            )
        return StatusResult(
            provider_id=encode_provider_id(spec.region, instance_id),
            node_name=instance.get("PrivateDnsName", ""),
        )

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        """Every live instance carrying the class's cluster and role tags: providerID -> the
        machine named by its Name tag. This is what the orphan sweep compares with the Machines."""
        spec, ec2 = await self._open(machine_class, secret_data)
        cluster, role = spec.tag_keys()
        filters = [
            {"Name": "tag-key", "Values": [cluster]},
            {"Name": "tag-key", "Values": [role]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
        try:
            instances = await _describe_all(ec2, filters)
        except errors.AwsError as error:
            raise MachineError(Code.Internal, errors.message(error)) from None
        return {
            encode_provider_id(spec.region, i["InstanceId"]): _name_tag(i)
            for i in instances
            if i.get("InstanceId") and _tagged(i, cluster, role)
        }

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        return volume_ids(pvs)


def run_instances_request(
    spec: AwsProviderSpec, machine: Machine, root_device: str | None, user_data: bytes
) -> dict[str, Any]:
    """The ``RunInstances`` request provider-aws sends for a machine of the class."""
    request: dict[str, Any] = {
        "BlockDeviceMappings": block_device_mappings(spec.block_devices, root_device),
        "ImageId": spec.ami,
        "InstanceType": spec.machine_type,
        "MinCount": 1,
        "MaxCount": 1,
        # Raw: boto3 base64-encodes RunInstances' UserData itself (the Go SDK leaves it to
        # provider-aws), so EC2 receives it encoded exactly once.
        "UserData": user_data,
        "IamInstanceProfile": {"Name": spec.iam.name} if spec.iam.name else {"Arn": spec.iam.arn},
        "NetworkInterfaces": network_interfaces(spec),
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": tags(spec.tags, machine.name)}
            for kind in ("instance", "volume", "network-interface")
        ],
    }
    options = spec.instance_metadata_options
    if options is not None:
        request["MetadataOptions"] = _without_empty(
            {
                "HttpEndpoint": options.http_endpoint,
                "HttpPutResponseHopLimit": options.http_put_response_hop_limit,
                "HttpTokens": options.http_tokens,
                "HttpProtocolIpv6": options.http_protocol_ipv6,
            }
        )
    if spec.key_name:
        request["KeyName"] = spec.key_name
    cpu = spec.cpu_options
    if cpu is not None:
        cpu_request: dict[str, Any] = {}
        if cpu.amd_sev_snp is not None:
            cpu_request["AmdSevSnp"] = cpu.amd_sev_snp
        if cpu.core_count is not None and cpu.threads_per_core is not None:
            cpu_request["CoreCount"] = cpu.core_count
            cpu_request["ThreadsPerCore"] = cpu.threads_per_core
        request["CpuOptions"] = cpu_request
    reservation = spec.capacity_reservation
    if reservation is not None:
        request["CapacityReservationSpecification"] = _without_empty(
            {
                "CapacityReservationPreference": reservation.preference,
                "CapacityReservationTarget": _without_empty(
                    {
                        "CapacityReservationId": reservation.id,
                        "CapacityReservationResourceGroupArn": reservation.resource_group_arn,
                    }
                ),
            }
        )
    if spec.instance_market_options is not None:
        request["InstanceMarketOptions"] = {"MarketType": spec.instance_market_options.market_type}
    elif spec.spot_price is not None:
        spot: dict[str, Any] = {"SpotInstanceType": "one-time"}
        if spec.spot_price:
            spot["MaxPrice"] = spec.spot_price
        request["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
    placement = placement_request(spec, machine)
    if placement:
        request["Placement"] = placement
    return request


def block_device_mappings(
    devices: Sequence[BlockDeviceSpec], root_device: str | None
) -> list[dict[str, Any]]:
    if not devices:
        raise MachineError(Code.InvalidArgument, "no block devices passed")
    mappings = []
    for disk in devices:
        name = disk.device_name
        if name == ROOT_DEVICE_NAME or len(devices) == 1:
            if root_device is None:
                raise MachineError(Code.InvalidArgument, "rootDeviceName cannot be nil")
            name = root_device
        ebs: dict[str, Any] = {
            "Encrypted": disk.ebs.encrypted,
            "VolumeSize": disk.ebs.volume_size,
            "VolumeType": disk.ebs.volume_type,
            # Deleted with the instance unless the spec says false in so many words.
            "DeleteOnTermination": disk.ebs.delete_on_termination is not False,
        }
        if disk.ebs.throughput is not None:
            ebs["Throughput"] = disk.ebs.throughput
        if disk.ebs.snapshot_id is not None:
            ebs["SnapshotId"] = disk.ebs.snapshot_id
        if disk.ebs.iops > 0:
            ebs["Iops"] = disk.ebs.iops
        mappings.append({"DeviceName": name, "Ebs": ebs})
    return mappings


def network_interfaces(spec: AwsProviderSpec) -> list[dict[str, Any]]:
    specs = []
    for i, nic in enumerate(spec.network_interfaces):
        entry: dict[str, Any] = {
            "Groups": nic.security_group_ids,
            "SubnetId": nic.subnet_id,
            "DeviceIndex": i if nic.device_index is None else nic.device_index,
            "DeleteOnTermination": True
            if nic.delete_on_termination is None
            else nic.delete_on_termination,
        }
        for key, value in (
            ("AssociatePublicIpAddress", nic.associate_public_ip_address),
            ("Description", nic.description),
            ("NetworkCardIndex", nic.network_card_index),
            ("InterfaceType", nic.interface_type),
        ):
            if value is not None:
                entry[key] = value
        if nic.ipv6_address_count is not None:
            entry["Ipv6AddressCount"] = nic.ipv6_address_count
            entry["PrimaryIpv6"] = True if nic.primary_ipv6 is None else nic.primary_ipv6
        specs.append(entry)
    return specs


def tags(class_tags: dict[str, str], machine_name: str) -> list[dict[str, str]]:
    """The class's tags with ``Name`` set to the machine's name: that tag is how a VM is found
    again, so a class cannot set it."""
    listed = [{"Key": k, "Value": v} for k, v in class_tags.items() if k != "Name"]
    return [*listed, {"Key": "Name", "Value": machine_name}]


def placement_request(spec: AwsProviderSpec, machine: Machine) -> dict[str, Any]:
    """The spec's placement, else the machine's ``machine.sapcloud.io/awsPlacement`` annotation
    (EC2's Placement as JSON); {} for none."""
    if spec.placement is not None:
        p = spec.placement
        return _without_empty(
            {
                "Tenancy": p.tenancy,
                "GroupId": p.group_id,
                "HostId": p.host_id,
                "PartitionNumber": p.partition_number,
                "Affinity": p.affinity,
            }
        )
    template = machine.spec.node_template
    raw = template.metadata.annotations.get(PLACEMENT_ANNOTATION, "") if template else ""
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError as error:
        raise MachineError(Code.Internal, f"{PLACEMENT_ANNOTATION}: {error}") from None
    if not isinstance(decoded, dict):
        raise MachineError(Code.Internal, f"{PLACEMENT_ANNOTATION}: not a JSON object")
    # Go's json.Unmarshal matches field names case-insensitively; EC2's own spelling is used.
    return {
        _PLACEMENT_FIELDS[k.lower()]: v
        for k, v in decoded.items()
        if k.lower() in _PLACEMENT_FIELDS
    }


_PLACEMENT_FIELDS = {
    name.lower(): name
    for name in (
        "Affinity",
        "AvailabilityZone",
        "GroupId",
        "GroupName",
        "HostId",
        "HostResourceGroupArn",
        "PartitionNumber",
        "SpreadDomain",
        "Tenancy",
    )
}


def _without_empty(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (None, "", {})}


def _tagged(instance: dict[str, Any], *keys: str) -> bool:
    """Whether the instance carries every tag key. EC2 already filtered on them; checked again
    because EC2 doubles that keep one filter per name (moto) would otherwise answer other
    clusters' instances."""
    have = {t.get("Key") for t in instance.get("Tags", ())}
    return all(key in have for key in keys)


def _name_tag(instance: dict[str, Any]) -> str:
    return next(
        (t.get("Value", "") for t in instance.get("Tags", ()) if t.get("Key") == "Name"), ""
    )


async def _describe_all(ec2: Ec2, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every page of a DescribeInstances, stopping on a repeated token as provider-aws does."""
    found: list[dict[str, Any]] = []
    token = ""
    seen: set[str] = set()
    while True:
        params: dict[str, Any] = {"Filters": filters}
        if token:
            params["NextToken"] = token
        page = await ec2.call("DescribeInstances", **params)
        found += _instances(page)
        token = page.get("NextToken") or ""
        if not token or token in seen:
            return found
        seen.add(token)


async def _by_tags(ec2: Ec2, machine_name: str, spec: AwsProviderSpec) -> list[dict[str, Any]]:
    """The machine's live instances by its Name tag and the class's cluster and role tags."""
    cluster, role = spec.tag_keys()
    filters = [
        {"Name": "tag:Name", "Values": [machine_name]},
        {"Name": "tag-key", "Values": [cluster]},
        {"Name": "tag-key", "Values": [role]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    try:
        instances = await _describe_all(ec2, filters)
    except errors.AwsError as error:
        raise MachineError(Code.Internal, errors.message(error)) from None
    return [i for i in instances if _tagged(i, cluster, role)]


async def _by_id(ec2: Ec2, instance_id: str) -> dict[str, Any]:
    try:
        return await ec2.call("DescribeInstances", InstanceIds=[instance_id])
    except errors.AwsError as error:
        if errors.is_instance_not_found(error):
            raise MachineError(Code.NotFound, NOT_BACKED) from None
        raise MachineError(Code.Internal, errors.message(error)) from None


async def _matching(ec2: Ec2, machine: Machine, spec: AwsProviderSpec) -> list[dict[str, Any]]:
    """The machine's instances: by tags, else by its providerID (an instance whose tags were
    changed by hand is still the machine's)."""
    instances = await _by_tags(ec2, machine.name, spec)
    if instances:
        return instances
    if not machine.spec.provider_id:
        raise MachineError(Code.NotFound, "No ProviderID found on the machine")
    _, instance_id = decode_provider_id(machine.spec.provider_id)
    instances = _instances(await _by_id(ec2, instance_id))
    if not instances:
        raise MachineError(Code.NotFound, NOT_BACKED)
    return instances


async def _terminate(ec2: Ec2, instance_id: str) -> None:
    try:
        await ec2.call("TerminateInstances", InstanceIds=[instance_id], DryRun=False)
    except errors.AwsError as error:
        code = errors.terminate_code(error)
        if code != Code.NotFound:
            raise MachineError(code, errors.message(error)) from None


async def _disable_source_dest_check(ec2: Ec2, instance_id: str) -> None:
    """Source/destination checks off on every interface that supports it (not EFA ones)."""
    instances = _instances(await ec2.call("DescribeInstances", InstanceIds=[instance_id]))
    if not instances:
        raise MachineError(Code.Uninitialized, f"no instance found for instanceID {instance_id}")
    nics = instances[0].get("NetworkInterfaces", ())
    if not nics:
        raise MachineError(
            Code.Uninitialized, f"no network interfaces found for instanceID {instance_id}"
        )
    failure: Exception | None = None
    for nic in nics:
        if nic.get("InterfaceType") in _EFA:
            continue
        try:
            await ec2.call(
                "ModifyNetworkInterfaceAttribute",
                NetworkInterfaceId=nic["NetworkInterfaceId"],
                SourceDestCheck={"Value": False},
            )
        except errors.AwsError as error:
            failure = error
    if failure is not None:
        raise failure


def _prefix_shortfalls(
    spec: AwsProviderSpec, instance: dict[str, Any]
) -> list[tuple[str, int, int]]:
    """(interface ID, prefixes wanted, prefixes assigned) where the spec wants IPv6 prefixes the
    interface lacks, matched by device index."""
    short = []
    for nic in instance.get("NetworkInterfaces", ()):
        index = (nic.get("Attachment") or {}).get("DeviceIndex", -1)
        if not 0 <= index < len(spec.network_interfaces):
            continue
        wanted = spec.network_interfaces[index].ipv6_prefix_count
        have = len(nic.get("Ipv6Prefixes", ()))
        if wanted is not None and have != wanted:
            short.append((nic.get("NetworkInterfaceId", ""), wanted, have))
    return short


def _device_index(spec: AwsProviderSpec, instance: dict[str, Any], nic_id: str) -> int:
    for nic in instance.get("NetworkInterfaces", ()):
        if nic.get("NetworkInterfaceId") == nic_id:
            return int((nic.get("Attachment") or {}).get("DeviceIndex", -1))
    return -1
