"""The demo's own view of the cluster: informers on what the scenario watches, and one event
that fires on any change."""

from __future__ import annotations

from typing import Any

import trio

from kubetrio.api.core import Node, Pod
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.demo import seed
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client

__all__ = ["ClusterView"]


class ClusterView:
    """The demo's own informers: the deployment, its MachineSets and Machines, all Nodes and
    Pods, and one event that fires on any change so waits and the display wake exactly when
    something happened."""

    def __init__(self, client: Client) -> None:
        selector = f"name={seed.DEPLOYMENT}"
        self.deployments = Informer(client, MachineDeployment, namespace=seed.NAMESPACE)
        self.sets = Informer(client, MachineSet, namespace=seed.NAMESPACE, label_selector=selector)
        self.machines = Informer(client, Machine, namespace=seed.NAMESPACE, label_selector=selector)
        self.nodes = Informer(client, Node)
        self.pods = Informer(client, Pod)
        self._changed = trio.Event()
        handler: EventHandler[Any] = EventHandler(
            on_add=lambda *_: self.notify(),
            on_update=lambda *_: self.notify(),
            on_delete=lambda *_: self.notify(),
        )
        for informer in self.informers():
            informer.add_handler(handler)

    def informers(self) -> tuple[Informer[Any], ...]:
        return (self.deployments, self.sets, self.machines, self.nodes, self.pods)

    def notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for informer in self.informers():
                nursery.start_soon(informer.run)
            for informer in self.informers():
                await informer.wait_for_sync()
            task_status.started()

    def deployment(self) -> MachineDeployment | None:
        return self.deployments.lister.get(seed.NAMESPACE, seed.DEPLOYMENT)

    def set_list(self) -> list[MachineSet]:
        return self.sets.lister.list(seed.NAMESPACE)

    def machine_list(self) -> list[Machine]:
        return self.machines.lister.list(seed.NAMESPACE)

    def node_map(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes.lister.list()}

    def running_pods(self, app: str) -> list[Pod]:
        return [
            pod
            for pod in self.pods.lister.list(seed.NAMESPACE)
            if pod.metadata.labels.get("app") == app
            and pod.spec.node_name
            and not pod.deleting
            and pod.status.phase == "Running"
        ]
