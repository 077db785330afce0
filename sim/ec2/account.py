"""The EC2 account moto starts with, as a user of it needs to know it: the region, the access
key pair boto3 signs with (moto accepts any), the default VPC's subnet and security group, two
AMIs of its catalogue, and the instance profile machines are started with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REGION = "eu-west-1"
PROFILE = "kubetrio-nodes"
ACCESS_KEY_ID = "AKIAKUBETRIOTEST"
SECRET_ACCESS_KEY = "test-secret"
KEYS = {"aws_access_key_id": ACCESS_KEY_ID, "aws_secret_access_key": SECRET_ACCESS_KEY}


@dataclass(frozen=True, slots=True)
class Ec2Account:
    url: str
    ami: str
    other_ami: str
    subnet: str
    security_group: str
    zone: str
    region: str = REGION


def ec2_client(url: str, region: str = REGION) -> Any:
    """A blocking boto3 EC2 client of the double at ``url``."""
    import boto3

    return boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )


def create_profile(url: str) -> None:
    """The instance profile machines name (moto checks that it exists)."""
    import boto3

    iam = boto3.client(
        "iam",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )
    iam.create_instance_profile(InstanceProfileName=PROFILE)


def describe_account(url: str) -> Ec2Account:
    """What moto's account at ``url`` has: two AMIs with a root device (block device mappings
    need one), the default subnet and security group. Blocking: the AMI catalogue loads in
    seconds on first use."""
    ec2 = ec2_client(url)
    images = ec2.describe_images(Owners=["amazon"])["Images"]
    rooted = [i["ImageId"] for i in images if i.get("RootDeviceName")]
    subnet = ec2.describe_subnets()["Subnets"][0]
    group = ec2.describe_security_groups()["SecurityGroups"][0]
    return Ec2Account(
        url=url,
        ami=rooted[0],
        other_ami=rooted[1],
        subnet=subnet["SubnetId"],
        security_group=group["GroupId"],
        zone=subnet["AvailabilityZone"],
    )


def cluster_instances(client: Any, cluster: str) -> list[dict[str, Any]]:
    """The instances tagged ``kubernetes.io/cluster/<cluster>``, in every state. Blocking."""
    answer = client.describe_instances(
        Filters=[{"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{cluster}"]}]
    )
    return [i for r in answer["Reservations"] for i in r["Instances"]]
