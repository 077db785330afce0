"""provider-aws's ``AWSProviderSpec``: a MachineClass's ``providerSpec`` for the ``aws`` driver,
typed with provider-aws's JSON names so a class written for MCM's AWS provider works unchanged.

Unknown fields are ignored, as Go's ``json.Unmarshal`` ignores them; a value of the wrong type
is refused as provider-aws refuses it (``Internal``: the class cannot be read at all). Optional
numbers and booleans that provider-aws holds as pointers are ``None`` here when absent, because
"unset" and "zero" mean different things to EC2.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.controllers.machine.driver.codes import Code, MachineError

# The tag prefixes provider-aws requires on every class: ListMachines finds a class's VMs by them.
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
ROLE_TAG_PREFIX = "kubernetes.io/role/"
ROOT_DEVICE_NAME = "/root"
DATA_DEVICE_NAME_FORMAT = r"^/dev/(sd[a-z]|xvd[a-c][a-z]?)$"
VOLUME_TYPES = ("gp2", "gp3", "io1", "st1", "sc1", "standard")


class _Spec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of the spec's parts: absent fields take their defaults, unknown ones are ignored."""


class EbsSpec(_Spec):
    delete_on_termination: bool | None = msgspec.field(default=None, name="deleteOnTermination")
    encrypted: bool = False
    iops: int = 0
    throughput: int | None = None
    kms_key_id: str | None = msgspec.field(default=None, name="kmsKeyID")
    snapshot_id: str | None = msgspec.field(default=None, name="snapshotID")
    volume_size: int = msgspec.field(default=0, name="volumeSize")
    volume_type: str = msgspec.field(default="", name="volumeType")


class BlockDeviceSpec(_Spec):
    device_name: str = msgspec.field(default="", name="deviceName")
    ebs: EbsSpec = msgspec.field(default_factory=EbsSpec)
    no_device: str = msgspec.field(default="", name="noDevice")
    virtual_name: str = msgspec.field(default="", name="virtualName")


class CapacityReservationSpec(_Spec):
    preference: str = msgspec.field(default="", name="capacityReservationPreference")
    id: str | None = msgspec.field(default=None, name="capacityReservationId")
    resource_group_arn: str | None = msgspec.field(
        default=None, name="capacityReservationResourceGroupArn"
    )


class IamSpec(_Spec):
    arn: str = ""
    name: str = ""


class NetworkInterfaceSpec(_Spec):
    associate_public_ip_address: bool | None = msgspec.field(
        default=None, name="associatePublicIPAddress"
    )
    ipv6_address_count: int | None = msgspec.field(default=None, name="ipv6AddressCount")
    ipv6_prefix_count: int | None = msgspec.field(default=None, name="ipv6PrefixCount")
    delete_on_termination: bool | None = msgspec.field(default=None, name="deleteOnTermination")
    description: str | None = None
    security_group_ids: list[str] = msgspec.field(default_factory=list, name="securityGroupIDs")
    subnet_id: str = msgspec.field(default="", name="subnetID")
    interface_type: str | None = msgspec.field(default=None, name="interfaceType")
    network_card_index: int | None = msgspec.field(default=None, name="networkCardIndex")
    device_index: int | None = msgspec.field(default=None, name="deviceIndex")
    primary_ipv6: bool | None = msgspec.field(default=None, name="primaryIpv6")


class PlacementSpec(_Spec):
    group_id: str | None = msgspec.field(default=None, name="groupId")
    tenancy: str | None = None
    host_id: str | None = msgspec.field(default=None, name="hostId")
    partition_number: int | None = msgspec.field(default=None, name="partitionNumber")
    affinity: str | None = None


class MetadataOptionsSpec(_Spec):
    http_endpoint: str = msgspec.field(default="", name="httpEndpoint")
    http_put_response_hop_limit: int | None = msgspec.field(
        default=None, name="httpPutResponseHopLimit"
    )
    http_tokens: str = msgspec.field(default="", name="httpTokens")
    http_protocol_ipv6: str = msgspec.field(default="", name="httpProtocolIpv6")


class CpuOptionsSpec(_Spec):
    core_count: int | None = msgspec.field(default=None, name="coreCount")
    threads_per_core: int | None = msgspec.field(default=None, name="threadsPerCore")
    amd_sev_snp: str | None = msgspec.field(default=None, name="amdSevSnp")


class MarketOptionsSpec(_Spec):
    market_type: str = msgspec.field(default="", name="marketType")


class AwsProviderSpec(_Spec):
    api_version: str = msgspec.field(default="", name="apiVersion")
    ami: str = ""
    block_devices: list[BlockDeviceSpec] = msgspec.field(default_factory=list, name="blockDevices")
    capacity_reservation: CapacityReservationSpec | None = msgspec.field(
        default=None, name="capacityReservation"
    )
    ebs_optimized: bool = msgspec.field(default=False, name="ebsOptimized")
    iam: IamSpec = msgspec.field(default_factory=IamSpec)
    machine_type: str = msgspec.field(default="", name="machineType")
    key_name: str | None = msgspec.field(default=None, name="keyName")
    monitoring: bool = False
    network_interfaces: list[NetworkInterfaceSpec] = msgspec.field(
        default_factory=list, name="networkInterfaces"
    )
    region: str = ""
    spot_price: str | None = msgspec.field(default=None, name="spotPrice")
    src_and_dst_checks_enabled: bool | None = msgspec.field(
        default=None, name="srcAndDstChecksEnabled"
    )
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    instance_metadata_options: MetadataOptionsSpec | None = msgspec.field(
        default=None, name="instanceMetadataOptions"
    )
    cpu_options: CpuOptionsSpec | None = msgspec.field(default=None, name="cpuOptions")
    placement: PlacementSpec | None = None
    instance_market_options: MarketOptionsSpec | None = msgspec.field(
        default=None, name="instanceMarketOptions"
    )

    def tag_keys(self) -> tuple[str, str]:
        """The cluster and role tag keys (provider-aws takes the last of each it meets)."""
        cluster = role = ""
        for key in self.tags:
            if CLUSTER_TAG_PREFIX in key:
                cluster = key
            elif ROLE_TAG_PREFIX in key:
                role = key
        return cluster, role


def decode_spec(raw: dict[str, Any]) -> AwsProviderSpec:
    """The typed spec of a class's ``providerSpec``; ``Internal`` when it does not fit (the class
    cannot be read, which no retry of the machine will change)."""
    try:
        return msgspec.convert(raw, AwsProviderSpec, strict=True)
    except msgspec.ValidationError as error:
        raise MachineError(Code.Internal, f"providerSpec: {error}") from None
