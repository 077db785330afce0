"""What each EC2 instance's kubelet and the AWS cloud controller do for a cluster: a running
instance registers its Node (named by its private DNS name, providerID ``aws:///<zone>/<id>``
as the AWS cloud provider writes it) and reports Ready with its capacity; a stopped one stops
reporting (Ready Unknown, as the node lifecycle controller marks it); a terminated one's Node
is removed. The pods on those Nodes are the simulated cluster's kubelet's to run."""

from __future__ import annotations

from typing import Any

import trio

from kubetrio.emulator import Emulator, ExtensionFactory
from kubetrio.runtime.util.inflight import request_in_flight
from kubetrio.sim.cluster.objects import set_condition, set_kubelet_ready
from kubetrio.sim.ec2.account import cluster_instances, ec2_client

CAPACITY = {"cpu": "2", "memory": "8Gi", "pods": "110"}
GONE_STATES = ("shutting-down", "terminated")


class Ec2Kubelets:
    """Looks at the EC2 double every ``period`` seconds of the emulator's clock, as a node's
    status heartbeat would, and brings the Nodes of ``cluster``'s instances in line."""

    def __init__(self, emu: Emulator, url: str, cluster: str, period: float = 20.0) -> None:
        self.emu = emu
        self.url = url
        self.cluster = cluster
        self.period = period
        self._client: Any = None

    async def run(self) -> None:
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
        state = instance["State"]["Name"]
        node = self.emu.get("v1", "Node", name)
        if state in GONE_STATES:
            if node is not None:
                self.emu.delete("v1", "Node", name)
            return
        if node is None:
            if state != "running":
                return
            zone = instance["Placement"]["AvailabilityZone"]
            node = self.emu.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "node.kubernetes.io/instance-type": instance.get("InstanceType", ""),
                            "topology.kubernetes.io/zone": zone,
                        },
                    },
                    "spec": {"providerID": f"aws:///{zone}/{instance['InstanceId']}"},
                }
            )
        ready = "True" if state == "running" else "Unknown"
        conditions = (node.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == ready for c in conditions):
            return
        now = self.emu.store.clock.now_rfc3339()
        status = node.setdefault("status", {})
        status.setdefault("capacity", dict(CAPACITY))
        status.setdefault("allocatable", dict(CAPACITY))
        if ready == "True":
            set_kubelet_ready(node, now)
        else:
            set_condition(
                node,
                "Ready",
                "Unknown",
                "NodeStatusUnknown",
                now,
                message="Kubelet stopped posting node status.",
            )
        self.emu.update(node, subresource="status")


def ec2_kubelets(url: str, cluster: str, period: float) -> ExtensionFactory:
    """The kubelets of ``cluster``'s instances at the EC2 double ``url``, as an extension of
    the emulator they register their Nodes with."""

    def build(emu: Emulator) -> Ec2Kubelets:
        return Ec2Kubelets(emu, url, cluster, period)

    return build
