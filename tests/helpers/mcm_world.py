"""Gardener MCM's controllers on any API server: a manager in the test's trio run with the
machine, MachineSet, MachineDeployment and safety controllers, its own admin client, and the
``sim`` driver calling a simulated world that runs beside it as a client of the same server
(its cloud served on an address of its own, as ``kubetrio simulate`` serves it).

Everything the test writes goes through the API, so the same test runs on the emulator and on a
real kube-apiserver. The real control plane is shared by a test process's tests: objects go in
the test's namespace, and the Nodes the cloud registered (cluster-scoped) are deleted on exit.

With ``target=``, MCM's two clusters: Machines, classes and sets in ``server`` (the control
cluster), the simulated world, its Nodes and Pods in ``target``. With ``storage=True``, the
simulated storage service follows the target's Nodes on an address of its own, and the
storage node-delete and GC controllers run in the manager against it.
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

from kubetrio.api.core import Node, Pod
from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.setup import setup as machine_setup
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.controllers.safety.apiserver import control_cluster, target_cluster
from kubetrio.controllers.safety.setup import setup as overshooting_setup
from kubetrio.controllers.safety.setup import setup_machine_safety
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.runtime.util.duration import Duration
from kubetrio.sim.cloud import CloudApi
from kubetrio.sim.cluster import ClusterSimulation
from kubetrio.sim.serving import serve_api
from kubetrio.sim.storage import SimulatedStorage, serve_storage_sim
from kubetrio.sim.world import World, simulated_world
from kubetrio.testing import eventually, install_crds, run_manager
from kubetrio.testing.servers import ApiServer
from tests.helpers.deployments import deployment_doc
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
    "StatefulSet": "statefulsets",
}
# What lives in the control cluster; everything else the tests write goes to the target.
CONTROL_KINDS = {"Machine", "MachineClass", "MachineSet", "MachineDeployment", "Secret"}
# The storage service: a lost Node's storage node is offline and unlocked at once.
STORAGE = {"offline_after": (0.0, 0.0), "lock_seconds": 0.0}


@dataclass
class Mcm:
    """A test's handles: the server (the control cluster), an admin client, the world, the
    manager and its machine controller's context (whose caches the waits read); the target
    cluster (``server`` itself unless two) and the storage service when asked for."""

    server: ApiServer
    client: Client
    world: World
    manager: Manager
    ctx: MachineContext
    target: ApiServer
    target_client: Client
    storage: SimulatedStorage | None = None

    @property
    def ns(self) -> str:
        """The test's namespace in the control cluster (Machines and their kin)."""
        return self.server.namespace

    @property
    def target_ns(self) -> str:
        """The test's namespace in the target cluster (Pods and their kin)."""
        return self.target.namespace

    def name(self, short: str) -> str:
        """A name unique on the shared server (it becomes a cluster-scoped Node's)."""
        return f"{self.target_ns}-{short}"

    async def post(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj`` in the test's namespace of the cluster its kind lives in."""
        control = obj["kind"] in CONTROL_KINDS
        ns = self.ns if control else self.target_ns
        client = self.client if control else self.target_client
        obj["metadata"]["namespace"] = ns
        group, _, version = obj["apiVersion"].rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        path = f"{base}/namespaces/{ns}/{PLURALS[obj['kind']]}"
        answer = await client.request("POST", path, body=msgspec.json.encode(obj))
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

    async def pool(self, replicas: int, strategy: dict[str, Any] | None = None) -> str:
        """The deployment scenarios' start: classes ``small`` and ``large`` (the one a
        rollout moves to), and a MachineDeployment ``pool`` of ``replicas`` small machines;
        its name."""
        await self.seed_class("small")
        await self.seed_class("large", instanceType="l")
        pool = self.name("pool")
        await self.post(deployment_doc(pool, replicas=replicas, strategy=strategy))
        return pool

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


def server_url(server: ApiServer) -> str:
    """The server's own URL (an ``https://`` one for a real kube-apiserver)."""
    if server.emulator is not None:
        return server.emulator.url
    assert server.control_plane is not None
    return server.control_plane.url


def ready(node: Node | None) -> bool:
    return node is not None and any(
        c.type == "Ready" and c.status == "True" for c in node.status.conditions
    )


def running(m: Machine | None) -> bool:
    return m is not None and m.phase == PHASE_RUNNING


def running_machines(c: Mcm, **labels: str) -> list[Machine]:
    return [
        m
        for m in c.machines()
        if running(m)
        and not m.metadata.deletion_timestamp
        and all(m.metadata.labels.get(k) == v for k, v in labels.items())
    ]


def app_pods_on(c: Mcm, app: str) -> dict[str, list[str]]:
    """The app's running pods by node, as the machine controller's cache shows them."""
    on: dict[str, list[str]] = {}
    for p in c.ctx.drainer.cache.pods.list():
        if (
            p.metadata.namespace == c.target_ns
            and p.metadata.labels.get("app") == app
            and not p.deleting
            and p.status.phase == "Running"
        ):
            on.setdefault(p.spec.node_name, []).append(p.metadata.name)
    return on


@asynccontextmanager
async def mcm_on(
    server: ApiServer,
    simulate: ClusterSimulation = FAST,
    *,
    target: ApiServer | None = None,
    storage: bool = False,
    gc_delay: float = 30.0,
    manager_client: Client | None = None,
    **machine_options: Any,
) -> AsyncIterator[Mcm]:
    """The machine controllers on ``server``, with the simulated world beside them (on
    ``target`` when given: the cluster the machines join); with ``storage``, the storage
    service and its controllers (the GC's first pass ``gc_delay`` after the start). The
    manager talks to ``server`` through ``manager_client`` when given (a way to it that a test
    can cut)."""
    target = target or server
    client = server.client()
    target_client = target.client()
    await install_crds(client, *crd_documents())
    try:
        async with _mcm_on(
            server,
            simulate,
            target,
            client,
            target_client,
            storage,
            gc_delay,
            manager_client,
            machine_options,
        ) as mcm:
            yield mcm
    finally:
        # The Nodes are gone and no kubelet is left to end the pods bound to them: without
        # this they would stay for ever on a shared real server, and every later test's world
        # would mirror them (a real cluster's pod GC is not running there).
        for pod in (await target_client.list(Pod, namespace=target.namespace)).items:
            await target_client.delete(
                Pod,
                pod.metadata.name,
                namespace=target.namespace,
                grace_period_seconds=0,
                missing_ok=True,
            )


@asynccontextmanager
async def _mcm_on(
    server: ApiServer,
    simulate: ClusterSimulation,
    target: ApiServer,
    client: Client,
    target_client: Client,
    storage: bool,
    gc_delay: float,
    manager_client: Client | None,
    machine_options: dict[str, Any],
) -> AsyncIterator[Mcm]:
    async with (
        simulated_world(target.client(qps=0), simulate=simulate) as world,
        trio.open_nursery() as nursery,
    ):
        world.cloud.url = await nursery.start(
            partial(serve_api, CloudApi(world.cloud), "the simulated cloud")
        )
        service: SimulatedStorage | None = None
        storage_options = StorageOptions()
        if storage:
            service = await nursery.start(serve_storage, target.client(qps=0))
            assert service is not None
            storage_options = StorageOptions(
                backend_url=service.url, gc_delay=Duration(gc_delay), gc_interval=Duration(3600)
            )
        options = MachineOptions(
            namespace=server.namespace, sim_cloud_url=world.cloud.url, **machine_options
        )
        config = ManagerConfig(machine=options, storage=storage_options, workers={"machine": 5})
        contexts: list[MachineContext] = []

        def machines(manager: Manager, config: ManagerConfig) -> None:
            if target is not server:
                manager.add_cluster(TARGET, target_client)
            contexts.append(machine_setup(manager, config))
            ctx = contexts[0]
            # With two clusters the watchdog probes both, as MCM's does.
            probed = (
                [control_cluster(ctx.client, server.namespace), target_cluster(target_client)]
                if target is not server
                else None
            )
            setup_machine_safety(manager, ctx, probed)
            if storage:
                registry = ControllerRegistry(BUILTIN_CONTROLLERS)
                for name in ("nodedelete", "storagegc"):
                    registry.setup(name)(manager, config)

        try:
            async with run_manager(
                server,
                machines,
                machineset_setup,
                deployment_setup,
                overshooting_setup,
                config=config,
                client=manager_client,
                workers=config.workers,
            ) as manager:
                yield Mcm(
                    server, client, world, manager, contexts[0], target, target_client, service
                )
        finally:
            for vm in list(world.cloud.vms.values()):
                await target_client.delete(Node, vm.node_name, missing_ok=True)
            nursery.cancel_scope.cancel()


async def serve_storage(
    client: Client, *, task_status: trio.TaskStatus[SimulatedStorage] = trio.TASK_STATUS_IGNORED
) -> None:
    """The storage service until cancelled, handed over once it serves."""
    async with serve_storage_sim(client, **STORAGE) as service:
        task_status.started(service)
        await trio.sleep_forever()
