"""The machine controller end to end on AWS EC2 as moto serves it: MachineClass provider
``aws``, machines created as EC2 instances, joined by the Nodes their kubelets register
(``Ec2Kubelets``), deleted with their instances, orphans swept, failed instances replaced."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING, Machine
from kubetrio.api.machineset import MachineDeployment
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.driver import DriverRegistry
from kubetrio.controllers.machine.driver.aws.register import register_aws
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics, provider_metrics
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim.ec2 import Ec2Kubelets
from tests.helpers.deployments import deployment_doc
from tests.helpers.ec2 import KEYS, MotoEc2, new_cluster
from tests.helpers.machines import (
    MACHINE_API,
    USER_DATA,
    Harness,
    event_reasons,
    install_crds,
    machine_doc,
    machine_manager,
)

CLASS = "aws-small"


def seed_aws_class(
    emu: Emulator, ec2: MotoEc2, cluster: str, name: str = CLASS, **overrides: Any
) -> None:
    data = {
        "providerAccessKeyId": KEYS["aws_access_key_id"],
        "providerSecretAccessKey": KEYS["aws_secret_access_key"],
        "userData": USER_DATA,
    }
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-secret", "namespace": "default"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
    )
    emu.create(
        {
            "apiVersion": MACHINE_API,
            "kind": "MachineClass",
            "metadata": {"name": name, "namespace": "default"},
            "provider": "aws",
            "providerSpec": ec2.provider_spec(cluster, **overrides),
            "secretRef": {"name": f"{name}-secret", "namespace": "default"},
        }
    )


def aws_drivers(ec2: MotoEc2) -> Callable[[Manager], DriverRegistry]:
    def make(manager: Manager) -> DriverRegistry:
        registry = DriverRegistry()
        register_aws(registry, endpoint_url=ec2.url, metrics=provider_metrics(manager.registry))
        return registry

    return make


@asynccontextmanager
async def aws_world(
    emu: Emulator,
    ec2: MotoEc2,
    also: Sequence[Callable[[Manager, ManagerConfig], object]] = (),
    **options: Any,
) -> AsyncIterator[tuple[Harness, Ec2Kubelets]]:
    install_crds(emu)
    cluster = new_cluster()
    seed_aws_class(emu, ec2, cluster)
    kubelets = Ec2Kubelets(emu, ec2.url, cluster)
    async with (
        machine_manager(emu, drivers=aws_drivers(ec2), also=also, **options) as h,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(kubelets.run)
        yield h, kubelets
        nursery.cancel_scope.cancel()


def aws_calls(registry: CollectorRegistry) -> dict[str, float]:
    metrics = provider_metrics(registry)
    assert isinstance(metrics, ProviderMetrics)
    return {
        s.labels["service"]: s.value
        for s in metrics.requests.collect()[0].samples
        if s.name.endswith("_total") and s.labels["provider"] == "aws"
    }


@pytest.mark.slow
async def test_machine_is_created_on_ec2_joins_and_is_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock, moto_ec2: MotoEc2
) -> None:
    async with aws_world(emu, moto_ec2) as (h, kubelets):
        emu.create(machine_doc("m-1", machine_class=CLASS))
        running = await h.wait_phase("m-1", PHASE_RUNNING)
        [instance] = moto_ec2.instances(kubelets.cluster)
        assert running.spec.provider_id == f"aws:///{moto_ec2.region}/{instance['InstanceId']}"
        assert running.metadata.labels["node"] == instance["PrivateDnsName"]
        user_data = moto_ec2.client().describe_instance_attribute(
            InstanceId=instance["InstanceId"], Attribute="userData"
        )["UserData"]["Value"]
        joined = base64.b64decode(user_data).decode()
        assert "<<BOOTSTRAP_TOKEN>>" not in joined and "kubeadm join --token " in joined
        created = aws_calls(h.manager.registry)

        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        [instance] = moto_ec2.instances(kubelets.cluster)
        assert instance["State"]["Name"] in ("shutting-down", "terminated")
        # The Node's providerID is the cloud provider's (aws:///<zone>/<id>), the machine's
        # provider-aws's (aws:///<region>/<id>): the same VM, so drained and deleted as its own.
        reasons = await event_reasons(h, "m-1")
        assert "NodeDeleted" in reasons and "NodeKept" not in reasons
        done = aws_calls(h.manager.registry)
        assert created["RunInstances"] == 1 and done["TerminateInstances"] == 1
        print("EC2 requests per machine lifecycle:", done, "total", sum(done.values()))


@pytest.mark.slow
async def test_orphan_instance_is_terminated(
    emu: Emulator, mock_clock: trio.testing.MockClock, moto_ec2: MotoEc2
) -> None:
    async with aws_world(emu, moto_ec2, safety_orphan_vms_period=900) as (h, kubelets):
        emu.create(machine_doc("m-1", machine_class=CLASS))
        await h.wait_phase("m-1", PHASE_RUNNING)
        # An instance of the class's cluster that no Machine owns (its Machine was lost).
        spec = moto_ec2.provider_spec(kubelets.cluster)
        [ghost] = moto_ec2.client().run_instances(
            ImageId=moto_ec2.ami,
            MinCount=1,
            MaxCount=1,
            SubnetId=moto_ec2.subnet,
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in spec["tags"].items()]
                    + [{"Key": "Name", "Value": "ghost"}],
                }
            ],
        )["Instances"]
        # It joined the cluster, as an instance booting the class's image would.
        await h.wait_node(ghost["PrivateDnsName"], lambda node: node is not None)
        await trio.sleep(900 - trio.current_time() % 900 + 1)  # the next sweep
        await h.wait_node(ghost["PrivateDnsName"], lambda node: node is None)
        assert h.ctx.metrics.orphans_deleted._value.get() == 1
        states = {i["InstanceId"]: i["State"]["Name"] for i in moto_ec2.instances(kubelets.cluster)}
        assert states[ghost["InstanceId"]] in ("shutting-down", "terminated")
        assert h.machine("m-1").phase == PHASE_RUNNING  # type: ignore[union-attr]
        kept = h.machine("m-1").spec.provider_id.rsplit("/", 1)[1]  # type: ignore[union-attr]
        assert states[kept] == "running"


@pytest.mark.slow
async def test_stopped_instance_fails_its_machine(
    emu: Emulator, mock_clock: trio.testing.MockClock, moto_ec2: MotoEc2
) -> None:
    async with aws_world(emu, moto_ec2) as (h, _):
        emu.create(machine_doc("m-1", machine_class=CLASS))
        running = await h.wait_phase("m-1", PHASE_RUNNING)
        instance_id = running.spec.provider_id.rsplit("/", 1)[1]
        moto_ec2.client().stop_instances(InstanceIds=[instance_id])
        await h.wait_phase("m-1", "Unknown")
        stopped_at = trio.current_time()
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert 600 <= trio.current_time() - stopped_at <= 700  # MCM's health timeout
        assert failed.status.last_operation.description.startswith("Machine m-1 is not healthy")


@pytest.mark.slow
async def test_machine_deployment_replaces_a_failed_instance_and_rolls_to_another_ami(
    emu: Emulator, mock_clock: trio.testing.MockClock, moto_ec2: MotoEc2
) -> None:
    async with aws_world(emu, moto_ec2, also=(machineset_setup, deployment_setup)) as (
        h,
        kubelets,
    ):
        emu.create(deployment_doc("pool", replicas=2, machine_class=CLASS))

        def running(machines: list[Machine], class_name: str) -> bool:
            ours = [m for m in machines if m.spec.class_.name == class_name]
            return (
                len(machines) == 2
                and all(m.phase == PHASE_RUNNING for m in ours)
                and len(ours) == 2
            )

        every = lambda: h.ctx.machines.list("default")  # noqa: E731
        assert await h.ctx.machine_changes.wait_until(
            lambda: running(every(), CLASS), trio.current_time() + 3600
        )
        first = {m.name for m in every()}

        # An instance stopped behind the controller's back: Unknown, Failed, replaced.
        victim = every()[0]
        moto_ec2.client().stop_instances(InstanceIds=[victim.spec.provider_id.rsplit("/", 1)[1]])
        assert await h.ctx.machine_changes.wait_until(
            lambda: victim.name not in {m.name for m in every()} and running(every(), CLASS),
            trio.current_time() + 3600,
        )
        assert len(first & {m.name for m in every()}) == 1

        # A rolling update to a class on another AMI: every machine replaced, old instances gone.
        seed_aws_class(emu, moto_ec2, kubelets.cluster, name="aws-next", ami=moto_ec2.other_ami)
        await h.client.patch(
            MachineDeployment,
            "pool",
            {"spec": {"template": {"spec": {"class": {"name": "aws-next"}}}}},
            namespace="default",
        )
        assert await h.ctx.machine_changes.wait_until(
            lambda: running(every(), "aws-next"), trio.current_time() + 3600
        )
        live = [i for i in moto_ec2.instances(kubelets.cluster) if i["State"]["Name"] == "running"]
        assert sorted(i["ImageId"] for i in live) == [moto_ec2.other_ami] * 2
