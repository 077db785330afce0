"""Gardener MCM's controllers on any API server: a manager in the test's trio run with the
machine, MachineSet, MachineDeployment and safety controllers, its own admin client, and the
``sim`` driver calling a simulated world that runs beside it as a client of the same server
(its cloud served on an address of its own, as ``kubetrio simulate`` serves it).

Everything the test writes goes through the API, so the same test runs on the emulator and on a
real kube-apiserver. The real control plane is shared by a test process's tests: objects go in
the test's namespace, and the Nodes the cloud registered (cluster-scoped) are deleted on exit.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec
import trio

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.setup import setup as machine_setup
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.controllers.safety.setup import setup as overshooting_setup
from kubetrio.controllers.safety.setup import setup_machine_safety
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim.cloud import CloudApi
from kubetrio.sim.cluster import ClusterSimulation
from kubetrio.sim.serving import serve_api
from kubetrio.sim.world import World, simulated_world
from kubetrio.testing import eventually, install_crds, run_manager
from kubetrio.testing.servers import ApiServer
from tests.helpers.machines import MACHINE_API, USER_DATA

# Pods start at once and grace periods pass ten times as fast: the drains are what is tested.
FAST = ClusterSimulation(pod_start_delay=0.05, grace_factor=0.1)
TIMEOUT = 1800.0  # simulated seconds: free on the mock clock

PLURALS = {
    "Machine": "machines",
    "MachineClass": "machineclasses",
    "MachineSet": "machinesets",
    "MachineDeployment": "machinedeployments",
    "Secret": "secrets",
    "ReplicaSet": "replicasets",
    "Deployment": "deployments",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


@dataclass
class Mcm:
    """A test's handles: the server, an admin client, the world, the manager and its machine
    controller's context (whose caches the waits read)."""

    server: ApiServer
    client: Client
    world: World
    manager: Manager
    ctx: MachineContext

    @property
    def ns(self) -> str:
        return self.server.namespace

    def name(self, short: str) -> str:
        """A name unique on the shared server (it becomes a cluster-scoped Node's)."""
        return f"{self.ns}-{short}"

    async def post(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj`` in the test's namespace, through the API."""
        obj["metadata"]["namespace"] = self.ns
        group, _, version = obj["apiVersion"].rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        path = f"{base}/namespaces/{self.ns}/{PLURALS[obj['kind']]}"
        answer = await self.client.request("POST", path, body=msgspec.json.encode(obj))
        return dict(msgspec.json.decode(answer))

    async def merge_patch(self, kind: str, api: str, name: str, patch: dict[str, Any]) -> None:
        group, _, version = api.rpartition("/")
        path = f"/apis/{group}/{version}/namespaces/{self.ns}/{PLURALS[kind]}/{name}"
        await self.client.request(
            "PATCH",
            path,
            body=msgspec.json.encode(patch),
            content_type="application/merge-patch+json",
        )

    def machine(self, name: str) -> Machine | None:
        return self.ctx.machines.get(self.ns, name)

    def machines(self) -> list[Machine]:
        return [m for m in self.ctx.machines.list() if m.metadata.namespace == self.ns]

    def node(self, name: str) -> Node | None:
        return self.ctx.nodes.get("", name)

    def machine_sets(self) -> list[MachineSet]:
        return [
            s
            for s in self.manager.cache.informer(MachineSet, namespace=self.ns).lister.list()
            if not s.metadata.deletion_timestamp
        ]

    async def until(self, check: Callable[[], object]) -> None:
        """Until ``check`` holds, re-checked on every change the manager's informers see."""
        await eventually(check, timeout=TIMEOUT)

    async def seed_class(self, name: str, **provider_spec: Any) -> None:
        secret = f"{name}-secret"
        await self.post(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret},
                "data": {"userData": base64.b64encode(USER_DATA.encode()).decode()},
            }
        )
        await self.post(
            {
                "apiVersion": MACHINE_API,
                "kind": "MachineClass",
                "metadata": {"name": name},
                "provider": "sim",
                "providerSpec": {"region": "eu-1", "bootSeconds": 5, **provider_spec},
                "secretRef": {"name": secret, "namespace": self.ns},
            }
        )


def ready(node: Node | None) -> bool:
    return node is not None and any(
        c.type == "Ready" and c.status == "True" for c in node.status.conditions
    )


@asynccontextmanager
async def mcm_on(
    server: ApiServer, simulate: ClusterSimulation = FAST, **machine_options: Any
) -> AsyncIterator[Mcm]:
    """The machine controllers on ``server``, with the simulated world beside them."""
    client = server.client()
    await install_crds(client, *crd_documents())
    async with (
        simulated_world(server.client(qps=0), simulate=simulate) as world,
        trio.open_nursery() as nursery,
    ):
        world.cloud.url = await nursery.start(
            partial(serve_api, CloudApi(world.cloud), "the simulated cloud")
        )
        options = MachineOptions(
            namespace=server.namespace, sim_cloud_url=world.cloud.url, **machine_options
        )
        config = ManagerConfig(machine=options, workers={"machine": 5})
        contexts: list[MachineContext] = []

        def machines(manager: Manager, config: ManagerConfig) -> None:
            contexts.append(machine_setup(manager, config))
            setup_machine_safety(manager, contexts[0])

        try:
            async with run_manager(
                server,
                machines,
                machineset_setup,
                deployment_setup,
                overshooting_setup,
                config=config,
                workers=config.workers,
            ) as manager:
                yield Mcm(server, client, world, manager, contexts[0])
        finally:
            for vm in list(world.cloud.vms.values()):
                await client.delete(Node, vm.node_name, missing_ok=True)
            nursery.cancel_scope.cancel()
