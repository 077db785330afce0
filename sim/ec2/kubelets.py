"""What each EC2 instance's kubelet and the AWS cloud controller do for a cluster: a running
instance registers its Node (named by its private DNS name, providerID ``aws:///<zone>/<id>``
as the AWS cloud provider writes it) and reports Ready with its capacity; a stopped one stops
reporting (Ready Unknown, as the node lifecycle controller marks it); a terminated one's Node
is removed. The pods on those Nodes are the simulated cluster's kubelet's to run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from kubetrio.emulator import Emulator, ExtensionFactory
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.inflight import request_in_flight
from kubetrio.sim.apiview import ApiObjects
from kubetrio.sim.cluster.objects import Obj, condition, set_condition, set_kubelet_ready
from kubetrio.sim.ec2.account import cluster_instances, ec2_client

CAPACITY = {"cpu": "2", "memory": "8Gi", "pods": "110"}
GONE_STATES = ("shutting-down", "terminated")


class Ec2Kubelets:
    """Looks at the EC2 double every ``period`` seconds of the trio clock, as a node's status
    heartbeat would, and brings the Nodes of ``cluster``'s instances in line through the API
    server ``connect`` reaches (a mirror of its Nodes, as a real kubelet reads and writes only
    through the API)."""

    def __init__(
        self, connect: Callable[[], Client], url: str, cluster: str, period: float = 20.0
    ) -> None:
        self.connect = connect
        self.url = url
        self.cluster = cluster
        self.period = period
        self.objects = ApiObjects(resources=(ApiObjects.nodes,))
        self._client: Any = None

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.objects.run, self.connect())
            await self.objects.ready()
            while True:
                await self.sync()
                await trio.sleep(self.period)

    def _instances(self) -> list[dict[str, Any]]:
        if self._client is None:
            self._client = ec2_client(self.url)
        return cluster_instances(self._client, self.cluster)

    async def sync(self) -> None:
        # The answer comes from another thread: a test's autojumping clock must wait for it.
        with request_in_flight():
            instances = await trio.to_thread.run_sync(self._instances)
        for instance in instances:
            name = instance.get("PrivateDnsName", "")
            if name:
                self._sync_one(name, instance)

    def _sync_one(self, name: str, instance: dict[str, Any]) -> None:
        objs = self.objects
        state = instance["State"]["Name"]
        node = objs.get(objs.nodes, "", name)
        if state in GONE_STATES:
            if node is not None:
                objs.delete(objs.nodes, node)
            return
        if node is None:
            if state != "running":
                return
            zone = instance["Placement"]["AvailabilityZone"]
            node = objs.create(
                objs.nodes,
                "",
                {
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "node.kubernetes.io/instance-type": instance.get("InstanceType", ""),
                            "topology.kubernetes.io/zone": zone,
                        },
                    },
                    "spec": {"providerID": f"aws:///{zone}/{instance['InstanceId']}"},
                },
            )
            if node is None:
                return
        ready = "True" if state == "running" else "Unknown"
        if condition(node, "Ready") == ready:
            return
        now = objs.now_rfc3339()

        def report(n: Obj) -> None:
            status = n.setdefault("status", {})
            status.setdefault("capacity", dict(CAPACITY))
            status.setdefault("allocatable", dict(CAPACITY))
            if ready == "True":
                set_kubelet_ready(n, now)
            else:
                set_condition(
                    n,
                    "Ready",
                    "Unknown",
                    "NodeStatusUnknown",
                    now,
                    message="Kubelet stopped posting node status.",
                )

        objs.mutate(objs.nodes, node, report, status=True)


def emulator_client(emu: Emulator) -> Client:
    """A client of ``emu``'s HTTP API, as any other of its clients."""
    return Client.from_url(emu.url, token=emu.token, qps=0, max_concurrency=16)


def ec2_kubelets(url: str, cluster: str, period: float) -> ExtensionFactory:
    """The kubelets of ``cluster``'s instances at the EC2 double ``url``, as an extension of
    the emulator they register their Nodes with (through its API)."""

    def build(emu: Emulator) -> Ec2Kubelets:
        return Ec2Kubelets(lambda: emulator_client(emu), url, cluster, period)

    return build
