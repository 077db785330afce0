"""The cloud the demo's machines live in, as far as the demo itself deals with it: the class
Secret and the two MachineClasses a user would write for it, how one VM is broken there (the
cloud's doing, not a user's), and which VMs it still has for the final orphans check.

``sim`` is the simulated cloud the embedded emulator serves on an address of its own (the one the
``sim`` driver is configured with); ``aws`` is moto's EC2 server it starts beside it (``kubetrio
emulator --ec2-cluster``), which the ``aws`` driver talks to through boto3 as to AWS. boto3 is
imported only for ``aws``.
"""

from __future__ import annotations

import base64
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from kubetrio.cmd.demo import EC2_CLUSTER, seed
from kubetrio.runtime.http.errors import NoResponse
from kubetrio.runtime.http.pool import ConnectionPool
from kubetrio.runtime.util.inflight import request_in_flight

if TYPE_CHECKING:
    from kubetrio.sim.ec2 import Ec2Account

# The simulated cloud's administration: its VMs, and one of them breaking.
CLOUD_VMS_PATH = "/v1/vms"
CLOUD_FAIL_PATH = "/v1/fail"
CLOUD_TIMEOUT = 10.0
EC2_SECRET = "demo-aws-credentials"
EC2_GONE = ("shutting-down", "terminated")


class DemoCloud(Protocol):
    class_name: str  # the class the deployment starts with
    new_class_name: str  # the one it is rolled to
    in_place_class_name: str  # the one it is then updated to in place

    async def prepare(self) -> None:
        """Learn what the classes need from the cloud, before the first phase is timed."""
        ...

    async def documents(self) -> list[dict[str, Any]]:
        """The class Secret and the three MachineClasses."""
        ...

    async def break_vm(self, provider_id: str) -> None:
        """The VM's kubelet stops reporting: its Node's Ready turns Unknown."""
        ...

    async def vms(self) -> list[str]:
        """The provider IDs of the VMs the cloud still has (not deleted), as its driver
        writes them."""
        ...


class SimCloudError(Exception):
    """The simulated cloud could not be asked (no address, no answer, a refusal)."""


class SimCloud:
    """The simulated cloud at ``url`` (None: the manager was given none, so there is no cloud
    to ask)."""

    class_name = seed.CLASS_NAME
    new_class_name = seed.NEW_CLASS_NAME
    in_place_class_name = seed.IN_PLACE_CLASS_NAME

    def __init__(self, url: str | None, boot_seconds: float) -> None:
        self.url = url
        self.boot_seconds = boot_seconds

    async def prepare(self) -> None:
        return None

    async def documents(self) -> list[dict[str, Any]]:
        return [seed.class_secret(), *seed.machine_classes(self.boot_seconds)]

    async def break_vm(self, provider_id: str) -> None:
        """The VM breaks at the simulated cloud: its kubelet stops, its Node's Ready turns
        Unknown, and the machine controller's health check takes it from there."""
        await self._request("POST", CLOUD_FAIL_PATH, {"providerID": provider_id})

    async def vms(self) -> list[str]:
        try:
            listed = msgspec.json.decode(await self._request("GET", CLOUD_VMS_PATH))
        except (SimCloudError, msgspec.DecodeError):
            listed = {}  # no simulated cloud to ask
        items = listed.get("items") if isinstance(listed, dict) else None
        return sorted(str(vm.get("providerID")) for vm in items or () if isinstance(vm, dict))

    async def _request(self, method: str, path: str, body: object = None) -> bytes:
        if self.url is None:
            raise SimCloudError("no simulated cloud address (machine.simCloudURL)")
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        payload = None if body is None else msgspec.json.encode(body)
        try:
            with request_in_flight():  # a test's mock clock waits for the answer
                status, _, _, answer = await ConnectionPool(self.url, max_idle=0).exchange(
                    method, path, headers, payload, read_timeout=CLOUD_TIMEOUT
                )
        except NoResponse as error:
            raise SimCloudError(f"{method} {self.url}{path}: no answer: {error}") from None
        if status >= 400:
            raise SimCloudError(f"{method} {self.url}{path} answered {status}: {answer[:200]!r}")
        return answer


class Ec2Cloud:
    """moto's EC2 at ``url``: the classes use two AMIs of its catalogue (the rolling update
    moves to the other one and a bigger machine type; the in-place update back to the first
    image on the same instances), its default subnet and security group, and the access key
    pair boto3 signs with."""

    class_name = "demo-aws"
    new_class_name = "demo-aws-v2"
    in_place_class_name = "demo-aws-v3"

    def __init__(self, url: str) -> None:
        self.url = url
        self._client: Any = None
        self._account: Ec2Account | None = None

    def _ec2(self) -> Any:
        from kubetrio.sim.ec2 import ec2_client

        if self._client is None:
            self._client = ec2_client(self.url)
        return self._client

    async def prepare(self) -> None:
        """The account's AMIs, subnet and security group (moto's AMI catalogue takes seconds
        to load on first use)."""
        from kubetrio.sim.ec2 import describe_account

        if self._account is None:
            self._account = await trio.to_thread.run_sync(describe_account, self.url)

    async def documents(self) -> list[dict[str, Any]]:
        from kubetrio.sim.ec2 import KEYS

        await self.prepare()
        assert self._account is not None
        account = self._account
        data = {
            "providerAccessKeyId": KEYS["aws_access_key_id"],
            "providerSecretAccessKey": KEYS["aws_secret_access_key"],
            "userData": seed.USER_DATA,
        }
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": EC2_SECRET, "namespace": seed.NAMESPACE},
            "type": "Opaque",
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
        }
        return [
            secret,
            self._machine_class(self.class_name, account, account.ami, "m5.large"),
            self._machine_class(self.new_class_name, account, account.other_ami, "m5.xlarge"),
            self._machine_class(self.in_place_class_name, account, account.ami, "m5.xlarge"),
        ]

    def _machine_class(
        self, name: str, account: Any, ami: str, machine_type: str
    ) -> dict[str, Any]:
        from kubetrio.sim.ec2 import PROFILE

        return {
            "apiVersion": seed.MACHINE_API,
            "kind": "MachineClass",
            "metadata": {"name": name, "namespace": seed.NAMESPACE},
            "provider": "aws",
            "providerSpec": {
                "ami": ami,
                "region": account.region,
                "machineType": machine_type,
                "iam": {"name": PROFILE},
                "networkInterfaces": [
                    {"subnetID": account.subnet, "securityGroupIDs": [account.security_group]}
                ],
                "blockDevices": [
                    {"ebs": {"volumeSize": 50, "volumeType": "gp3", "encrypted": True}}
                ],
                "tags": {
                    f"kubernetes.io/cluster/{EC2_CLUSTER}": "1",
                    "kubernetes.io/role/node": "1",
                },
            },
            "secretRef": {"name": EC2_SECRET, "namespace": seed.NAMESPACE},
        }

    async def break_vm(self, provider_id: str) -> None:
        """The instance is stopped at EC2 (StopInstances): its kubelet stops with it."""
        instance = provider_id.rsplit("/", 1)[-1]
        await trio.to_thread.run_sync(partial(self._ec2().stop_instances, InstanceIds=[instance]))

    async def vms(self) -> list[str]:
        from kubetrio.sim.ec2 import cluster_instances

        client = self._ec2()
        instances = await trio.to_thread.run_sync(cluster_instances, client, EC2_CLUSTER)
        # The driver's providerID names the region (provider-aws's encoding), not the zone.
        region = client.meta.region_name
        return sorted(
            f"aws:///{region}/{i['InstanceId']}"
            for i in instances
            if i["State"]["Name"] not in EC2_GONE
        )
