"""``kubetrio sharder`` in process against both servers: with the replicas' configuration it
elects itself on a Lease of its own and assigns the machine kinds to the ring's shards, a
MachineSet following its MachineDeployment."""

from __future__ import annotations

import trio

from kubetrio.api.coordination import Lease
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config.sections import (
    LeaderElectionConfig,
    ManagerConfig,
    ShardingConfig,
)
from kubetrio.cmd.sharder import serve
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.runtime.leaderelection.elector import micro_time
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.runtime.sharding.labels import RING_LABEL, shard_label
from kubetrio.testing import eventually, install_crds
from kubetrio.testing.servers import ApiServer
from tests.helpers.deployments import deployment_doc
from tests.helpers.machinesets import machine_set_doc

SHARD = shard_label("kubetrio")


async def test_the_sharder_process_assigns_to_the_ring(api_server: ApiServer) -> None:
    namespace = api_server.namespace
    admin = api_server.client()
    await install_crds(admin, *crd_documents())
    now = micro_time()
    await admin.create(
        Lease,
        {
            "metadata": {"name": "replica-0", "labels": {RING_LABEL: "kubetrio"}},
            "spec": {
                "holderIdentity": "replica-0",
                "leaseDurationSeconds": 600,
                "acquireTime": now,
                "renewTime": now,
            },
        },
        namespace=namespace,
    )
    deployment = deployment_doc("pool", replicas=0)
    deployment["metadata"]["namespace"] = namespace
    created = await admin.create(MachineDeployment, deployment, namespace=namespace)
    owned = machine_set_doc("pool-abc", 0)
    owned["metadata"]["namespace"] = namespace
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "machine.sapcloud.io/v1alpha1",
            "kind": "MachineDeployment",
            "name": "pool",
            "uid": created.metadata.uid,
            "controller": True,
        }
    ]
    await admin.create(MachineSet, owned, namespace=namespace)
    config = ManagerConfig(
        kubeconfig=str(api_server.kubeconfig_path),
        controllers=("machine", "machineset", "machinedeployment"),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=LeaderElectionConfig(enabled=True, namespace=namespace),
        sharding=ShardingConfig(enabled=True),
        machine=MachineOptions(namespace=namespace),
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, config, ControllerRegistry(BUILTIN_CONTROLLERS))

        async def assigned() -> None:
            md = await admin.get(MachineDeployment, "pool", namespace=namespace)
            ms = await admin.get(MachineSet, "pool-abc", namespace=namespace)
            assert md.metadata.labels.get(SHARD) == "replica-0"
            assert ms.metadata.labels.get(SHARD) == "replica-0"

        await eventually(assigned, interval=0.2, on=[], timeout=60)
        leader = await admin.get(Lease, "kubetrio-leader-sharder", namespace=namespace)
        assert leader.spec.holder_identity
        nursery.cancel_scope.cancel()
