"""provider-aws's validation of a class (``ValidateAWSProviderSpec``), with its messages.

A class that fails is refused with ``InvalidArgument`` before any request reaches EC2, as
provider-aws refuses it: the message names every bad field at once, in provider-aws's order, so
the operator fixes the class in one edit rather than one error per reconcile.
"""

from __future__ import annotations

import re
from collections import Counter

from kubetrio.controllers.machine.driver.aws.fielderrors import (
    FieldError,
    aggregate,
    forbidden,
    invalid,
    invalid_shown,
    not_supported,
    required,
)
from kubetrio.controllers.machine.driver.aws.spec import (
    CLUSTER_TAG_PREFIX,
    DATA_DEVICE_NAME_FORMAT,
    ROLE_TAG_PREFIX,
    ROOT_DEVICE_NAME,
    VOLUME_TYPES,
    AwsProviderSpec,
    BlockDeviceSpec,
    CapacityReservationSpec,
    CpuOptionsSpec,
    MarketOptionsSpec,
    MetadataOptionsSpec,
    NetworkInterfaceSpec,
    PlacementSpec,
)
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.runtime.util.gotext import go_quote

# The class secret's keys, both spellings provider-aws accepts.
ACCESS_KEY_ID = "providerAccessKeyId"
SECRET_ACCESS_KEY = "providerSecretAccessKey"
ALT_ACCESS_KEY_ID = "accessKeyID"
ALT_SECRET_ACCESS_KEY = "secretAccessKey"
TOKEN_FILE = "workloadIdentityTokenFile"
ROLE_ARN = "roleARN"
USER_DATA = "userData"

# EC2's enumerations provider-aws validates against (aws-sdk-go-v2's ec2 types).
INTERFACE_TYPES = ("interface", "efa", "efa-only")
MARKET_TYPES = ("spot", "capacity-block", "interruptible-capacity-reservation")
AMD_SEV_SNP = ("enabled", "disabled")
_DATA_DEVICE_NAME = re.compile(DATA_DEVICE_NAME_FORMAT)
_SPEC = "providerSpec"


def validate(spec: AwsProviderSpec, secret: SecretData | None) -> None:
    """Raise ``InvalidArgument`` with every problem of the spec and secret, as provider-aws."""
    problems = spec_problems(spec, secret)
    if problems:
        message = f"error while validating ProviderSpec {aggregate(problems)}"
        raise MachineError(Code.InvalidArgument, message)


def spec_problems(spec: AwsProviderSpec, secret: SecretData | None) -> list[FieldError]:
    errors: list[FieldError] = []
    if not spec.ami:
        errors.append(required(f"{_SPEC}.ami", "AMI is required"))
    if not spec.region:
        errors.append(required(f"{_SPEC}.region", "Region is required"))
    if not spec.machine_type:
        errors.append(required(f"{_SPEC}.machineType", "MachineType is required"))
    if bool(spec.iam.name) == bool(spec.iam.arn):
        shown = (
            f"api.AWSIAMProfileSpec{{ARN:{go_quote(spec.iam.arn)}, Name:{go_quote(spec.iam.name)}}}"
        )
        errors.append(invalid_shown(f"{_SPEC}.iam", shown, "either IAM Name or ARN must be set"))
    errors += _block_devices(spec.block_devices, f"{_SPEC}.blockDevices")
    errors += _capacity_reservation(spec.capacity_reservation, f"{_SPEC}.capacityReservation")
    errors += _network_interfaces(spec.network_interfaces, f"{_SPEC}.networkInterfaces")
    errors += _placement(spec.placement, f"{_SPEC}.placement")
    errors += _market_options(spec.instance_market_options, f"{_SPEC}.instanceMarketOptions")
    errors += secret_problems(secret)
    errors += _tags(spec, f"{_SPEC}.tags")
    errors += _metadata(spec.instance_metadata_options, f"{_SPEC}.instanceMetadata")
    errors += _cpu_options(spec.cpu_options, f"{_SPEC}.cpuOptions")
    return errors


def secret_problems(secret: SecretData | None) -> list[FieldError]:
    """provider-aws's ``ValidateSecret``: a workload-identity token file with its role, or an
    access key pair; user data either way."""
    if secret is None:
        return [required("secretRef.", "secretRef is required")]
    errors: list[FieldError] = []
    if TOKEN_FILE in secret:
        if not secret[TOKEN_FILE]:
            errors.append(
                required(
                    "secretRef.workloadIdentityTokenFile",
                    "Workload identity token file is required",
                )
            )
        if not secret.get(ROLE_ARN):
            errors.append(
                required("secretRef.roleARN", "Role ARN is required when workload identity is used")
            )
    else:
        if not secret.get(ACCESS_KEY_ID) and not secret.get(ALT_ACCESS_KEY_ID):
            errors.append(
                required(
                    "secretRef.AWSAccessKeyID",
                    f"Mention atleast {ACCESS_KEY_ID} or {ALT_ACCESS_KEY_ID}",
                )
            )
        if not secret.get(SECRET_ACCESS_KEY) and not secret.get(ALT_SECRET_ACCESS_KEY):
            errors.append(
                required(
                    "secretRef.AWSSecretAccessKey",
                    f"Mention atleast {SECRET_ACCESS_KEY} or {ALT_SECRET_ACCESS_KEY}",
                )
            )
    if not secret.get(USER_DATA):
        errors.append(required("secretRef.userData", "Mention userData"))
    return errors


def _tags(spec: AwsProviderSpec, path: str) -> list[FieldError]:
    cluster, role = spec.tag_keys()
    errors = []
    if not cluster:
        errors.append(required(f"{path}.", f"Tag required of the form {CLUSTER_TAG_PREFIX}****"))
    if not role:
        errors.append(required(f"{path}.", f"Tag required of the form {ROLE_TAG_PREFIX}****"))
    return errors


def _block_devices(devices: list[BlockDeviceSpec], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    roots = 0
    names: Counter[str] = Counter()
    for i, disk in enumerate(devices):
        at = f"{path}[{i}]"
        if disk.device_name == ROOT_DEVICE_NAME:
            roots += 1
        elif len(devices) > 1 and not _DATA_DEVICE_NAME.match(disk.device_name):
            detail = (
                f"Device name given: {disk.device_name} does not match the expected pattern"
                f" (regex used for validation is '{DATA_DEVICE_NAME_FORMAT}')"
            )
            errors.append(invalid(f"{at}.deviceName", disk.device_name, detail))
        names[disk.device_name] += 1
        ebs = disk.ebs
        if ebs.volume_type not in VOLUME_TYPES:
            listed = " ".join(VOLUME_TYPES)
            errors.append(
                required(
                    f"{at}.ebs.volumeType", f"Please mention a valid EBS volume type: [{listed}]"
                )
            )
        if ebs.volume_size <= 0:
            errors.append(
                required(f"{at}.ebs.volumeSize", "Please mention a valid EBS volume size")
            )
        if ebs.iops < 0 or (ebs.volume_type == "io1" and ebs.iops == 0):
            errors.append(required(f"{at}.ebs.iops", "Please mention a valid EBS volume iops"))
        if ebs.throughput is not None and ebs.throughput <= 0:
            errors.append(
                invalid(
                    f"{at}.ebs.throughput", ebs.throughput, "Throughput should be a positive value"
                )
            )
    if roots > 1 or (roots == 0 and len(devices) > 1):
        errors.append(required(path, "Only one device can be specified as root"))
    for name, count in names.items():
        if count > 1:
            errors.append(
                required(
                    path,
                    f"Device name '{name}' duplicated {count} times, DeviceName must be unique",
                )
            )
    return errors


def _capacity_reservation(spec: CapacityReservationSpec | None, path: str) -> list[FieldError]:
    if spec is None:
        return []
    if spec.preference:
        if spec.id is not None or spec.resource_group_arn is not None:
            detail = (
                "CapacityReservationPreference cannot be set when also providing a "
                "CapacityReservationID or CapacityReservationResourceGroupArn"
            )
            return [required(path, detail)]
    elif spec.id is not None and spec.resource_group_arn is not None:
        detail = (
            "CapacityReservationResourceGroupArn or CapacityReservationId are optional "
            "but only one should be used"
        )
        return [required(path, detail)]
    return []


def _network_interfaces(interfaces: list[NetworkInterfaceSpec], path: str) -> list[FieldError]:
    if not interfaces:
        return [required(f"{path}.", "Mention at least one NetworkInterface")]
    errors: list[FieldError] = []
    for i, nic in enumerate(interfaces):
        at = f"{path}[{i}]"
        if not nic.subnet_id:
            errors.append(required(f"{at}.subnetID", "SubnetID is required"))
        if not nic.security_group_ids:
            errors.append(
                required(f"{at}.securityGroupIDs", "Mention at least one securityGroupID")
            )
        for j, group in enumerate(nic.security_group_ids):
            if not group:
                detail = (
                    f"securityGroupIDs cannot be blank for networkInterface:{i} securityGroupID:{j}"
                )
                errors.append(required(f"{at}.securityGroupIDs", detail))
        if nic.interface_type is not None and nic.interface_type not in ("", *INTERFACE_TYPES):
            errors.append(not_supported(f"{at}.interfaceType", nic.interface_type, INTERFACE_TYPES))
        if nic.device_index is not None and nic.device_index < 0:
            errors.append(invalid(f"{at}.deviceIndex", nic.device_index, "must be >= 0"))
        if nic.network_card_index is not None and nic.network_card_index < 0:
            errors.append(invalid(f"{at}.networkCardIndex", nic.network_card_index, "must be >= 0"))
    return errors


def _metadata(options: MetadataOptionsSpec | None, path: str) -> list[FieldError]:
    if options is None:
        return []
    errors: list[FieldError] = []
    hops = options.http_put_response_hop_limit
    if hops is not None and not 0 <= hops <= 64:
        detail = "Only values between 0 and 64, both included, are accepted"
        errors.append(invalid(f"{path}.httpPutResponseHopLimit", hops, detail))
    for name, value, accepted in (
        ("httpEndpoint", options.http_endpoint, ("disabled", "enabled")),
        ("httpTokens", options.http_tokens, ("required", "optional")),
        ("httpProtocolIpv6", options.http_protocol_ipv6, ("enabled", "disabled")),
    ):
        if value and value not in accepted:
            errors.append(
                invalid(f"{path}.{name}", value, f"Accepted values: [{' '.join(accepted)}]")
            )
    return errors


def _cpu_options(options: CpuOptionsSpec | None, path: str) -> list[FieldError]:
    if options is None:
        return []
    errors: list[FieldError] = []
    if options.amd_sev_snp is not None and options.amd_sev_snp not in AMD_SEV_SNP:
        detail = f"AmdSevSnp must be one of [{' '.join(AMD_SEV_SNP)}]"
        errors.append(invalid(f"{path}.amdSevSnp", options.amd_sev_snp, detail))
    cores, threads = options.core_count is not None, options.threads_per_core is not None
    if cores != threads:
        if not cores:
            errors.append(
                required(f"{path}.coreCount", "CoreCount is required when ThreadsPerCore is set")
            )
        if not threads:
            errors.append(
                required(
                    f"{path}.threadsPerCore", "ThreadsPerCore is required when CoreCount is set"
                )
            )
        return errors
    if options.threads_per_core is not None and options.threads_per_core not in (1, 2):
        errors.append(
            invalid(
                f"{path}.threadsPerCore", options.threads_per_core, "ThreadsPerCore must be 1 or 2"
            )
        )
    return errors


def _placement(placement: PlacementSpec | None, path: str) -> list[FieldError]:
    if placement is None:
        return []
    errors: list[FieldError] = []
    tenancies, affinities = ("default", "dedicated", "host"), ("default", "host")
    if placement.tenancy is not None and placement.tenancy not in tenancies:
        errors.append(not_supported(f"{path}.tenancy", placement.tenancy, tenancies))
    if placement.affinity is not None and placement.affinity not in affinities:
        errors.append(not_supported(f"{path}.affinity", placement.affinity, affinities))
    if placement.host_id is not None and placement.tenancy != "host":
        errors.append(forbidden(f"{path}.hostId", 'hostId can only be set when tenancy is "host"'))
    if placement.partition_number is not None and placement.partition_number < 1:
        errors.append(
            invalid(f"{path}.partitionNumber", placement.partition_number, "must be >= 1")
        )
    return errors


def _market_options(options: MarketOptionsSpec | None, path: str) -> list[FieldError]:
    if options is None or options.market_type in MARKET_TYPES:
        return []
    return [not_supported(f"{path}.marketType", options.market_type, MARKET_TYPES)]
