"""The simulated world as a client of an API server, on the emulator and on a real
kube-apiserver: the same behaviours through the same requests, proven where it matters.

Each test runs ``simulated_world`` against the server with an admin client, writes through the
API as a user would, and waits on informer events (mock clock; the kit holds it while a request
is in flight). On the shared real control plane nodes are cluster-scoped, so every node name
carries the test's namespace and is deleted at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.storage import VolumeAttachment
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation
from kubetrio.sim.world import World, simulated_world
from kubetrio.testing import eventually
from kubetrio.testing.servers import ApiServer
from tests.helpers.simcluster import SimPod, claim, node, pod

TIMEOUT = 120.0


class Cluster:
    """A test's view of the server: informers on pods, nodes and attachments, writes as dicts."""

    def __init__(self, server: ApiServer, client: Client, world: World) -> None:
        self.server = server
        self.client = client
        self.world = world
        self.ns = server.namespace
        self.pods = Informer(client, SimPod, namespace=self.ns)
        self.nodes = Informer(client, Node)
        self.attachments = Informer(client, VolumeAttachment)
        self.node_names: list[str] = []

    def node_name(self, short: str) -> str:
        return f"{self.ns}-{short}"

    async def post(self, obj: dict[str, Any]) -> None:
        kind = obj["kind"]
        md = obj["metadata"]
        if kind == "Node":
            path = "/api/v1/nodes"
            self.node_names.append(md["name"])
        else:
            md["namespace"] = self.ns
            plural = {"Pod": "pods", "PersistentVolumeClaim": "persistentvolumeclaims"}[kind]
            path = f"/api/v1/namespaces/{self.ns}/{plural}"
        await self.client.request("POST", path, body=msgspec.json.encode(obj))

    def pod(self, name: str) -> SimPod | None:
        return self.pods.lister.get(self.ns, name)

    async def until(self, condition: Any, *informers: Informer[Any]) -> None:
        await eventually(condition, on=list(informers) or [self.pods, self.nodes], timeout=TIMEOUT)


@asynccontextmanager
async def cluster_on(server: ApiServer, options: ClusterSimulation) -> AsyncIterator[Cluster]:
    client = server.client()
    async with simulated_world(server.client(qps=0), simulate=options) as world:
        view = Cluster(server, client, world)
        async with trio.open_nursery() as nursery:
            for informer in (view.pods, view.nodes, view.attachments):
                nursery.start_soon(informer.run)
            for informer in (view.pods, view.nodes, view.attachments):
                await informer.wait_for_sync()
            try:
                yield view
            finally:
                for name in view.node_names:
                    await client.delete(Node, name, missing_ok=True)
                nursery.cancel_scope.cancel()


def ready(n: Node | None) -> bool:
    return n is not None and any(
        c.type == "Ready" and c.status == "True" for c in n.status.conditions
    )


# Only what an API server does not do itself: the workload controllers run in the real
# control plane's kube-controller-manager when it has them; here they are not exercised.
KUBELET_AND_SCHEDULER = ClusterSimulation(
    replicasets=False, statefulsets=False, daemonsets=False, deployments=False
)


async def test_nodes_get_ready_and_pods_are_scheduled_and_started(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with cluster_on(api_server, KUBELET_AND_SCHEDULER) as c:
        for short, zone in (("a", "z1"), ("b", "z2")):
            await c.post(node(c.node_name(short), zone=zone))
        await c.until(lambda: all(ready(c.nodes.lister.get("", c.node_name(s))) for s in "ab"))
        for i in range(4):
            await c.post(pod(f"p{i}"))
        await c.post(pod("zonal", selector={"zone": "z2"}))
        names = [f"p{i}" for i in range(4)] + ["zonal"]
        await c.until(lambda: all((p := c.pod(n)) is not None and p.ready for n in names))
        zonal = c.pod("zonal")
        assert zonal is not None and zonal.node == c.node_name("b")
        on = [sum(1 for n in names if (p := c.pod(n)) and p.node == c.node_name(s)) for s in "ab"]
        assert sorted(on) == [2, 3]  # spread: least loaded first
        assert c.world.objects.refused == 0


async def test_graceful_termination_and_deletion(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with cluster_on(api_server, ClusterSimulation(grace_factor=0.1)) as c:
        await c.post(node(c.node_name("a")))
        await c.post(pod("slow", grace=30))
        await c.until(lambda: (p := c.pod("slow")) is not None and p.ready)
        start = trio.current_time()
        await c.client.delete(SimPod, "slow", namespace=c.ns)
        await c.until(lambda: c.pod("slow") is None)
        took = trio.current_time() - start
        assert 3.0 <= took < 4.5, took  # 30 s grace x 0.1, on the mock clock


async def test_csi_volume_is_provisioned_attached_and_reported(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with cluster_on(api_server, ClusterSimulation(attach_delay=2.0)) as c:
        await c.post(node(c.node_name("a")))
        await c.post(claim("data"))
        start = trio.current_time()
        await c.post(pod("db", claims=("data",)))
        await c.until(lambda: (p := c.pod("db")) is not None and p.ready)
        assert trio.current_time() - start >= 2.0  # the pod waited for its volume

        def attached() -> list[bool]:
            return [
                va.status.attached
                for va in c.attachments.store.values()
                if va.spec.node_name == c.node_name("a") and va.spec.attacher == SIM_CSI_DRIVER
            ]

        # The test's own cache of attachments may see the status a moment after the kubelet's.
        await c.until(lambda: attached() == [True], c.attachments)
        await c.until(
            lambda: bool(
                (n := c.nodes.lister.get("", c.node_name("a"))) and n.status.volumes_attached
            ),
            c.nodes,
        )
