"""The simulated cluster as a whole: the enabled controllers, each woken by the store changes it
watches, all running as tasks of the emulator's own trio run."""

from __future__ import annotations

import trio

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.attach import AttachDetach
from kubetrio.sim.cluster.daemonset import DaemonSets
from kubetrio.sim.cluster.deployment import Deployments
from kubetrio.sim.cluster.disruption import Disruption
from kubetrio.sim.cluster.indexes import ClusterIndexes
from kubetrio.sim.cluster.inplaceagent import InPlaceUpdateAgent
from kubetrio.sim.cluster.kubelet import Kubelet
from kubetrio.sim.cluster.loop import Controller, Tracking, Wakeup, run_controller
from kubetrio.sim.cluster.nodelifecycle import NodeLifecycle
from kubetrio.sim.cluster.objects import Change, Objects
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.provisioner import Provisioner
from kubetrio.sim.cluster.replicaset import ReplicaSets
from kubetrio.sim.cluster.scheduler import Scheduler
from kubetrio.sim.cluster.statefulset import StatefulSets


def build_controllers(objs: Objects, options: ClusterSimulation) -> list[Controller]:
    enabled: list[tuple[bool, type[Controller]]] = [
        (options.node_lifecycle, NodeLifecycle),
        (options.kubelet, Kubelet),
        (options.scheduler, Scheduler),
        (options.provisioner, Provisioner),
        (options.attach_detach, AttachDetach),
        (options.replicasets, ReplicaSets),
        (options.statefulsets, StatefulSets),
        (options.daemonsets, DaemonSets),
        (options.deployments, Deployments),
        (options.disruption, Disruption),
        (options.in_place_update_agent, InPlaceUpdateAgent),
    ]
    return [cls(objs, options) for on, cls in enabled if on]  # type: ignore[call-arg]


class SimulatedCluster:
    def __init__(self, objects: Objects, options: ClusterSimulation) -> None:
        self.options = options
        self.objects = objects
        self.objects.indexes = self._indexes = ClusterIndexes()
        self.controllers = build_controllers(self.objects, options)
        self._wakeups = [Wakeup() for _ in self.controllers]
        # Per resource, whom a change concerns: a tracker to note it (None) and the wakeup.
        self._concerned: dict[str, list[tuple[Tracking | None, Wakeup]]] = {}
        for controller, wakeup in zip(self.controllers, self._wakeups, strict=True):
            tracker = controller if isinstance(controller, Tracking) else None
            for resource in controller.watches:
                self._concerned.setdefault(resource, []).append((tracker, wakeup))

    def _on_change(self, rt: KindInfo, ev: Change) -> None:
        self._indexes.note(rt.group_resource, ev.obj, gone=ev.type == "DELETED")  # before any pass
        for tracker, wakeup in self._concerned.get(rt.group_resource, ()):
            if tracker is not None:
                tracker.changed(rt, ev)
            wakeup.set()

    async def run(self) -> None:
        """Until cancelled."""
        await self.objects.ready()
        unsubscribe = self.objects.subscribe(self._on_change)
        for rt in (self.objects.pods, self.objects.replicasets):  # indexes.CONTROLLED
            for obj in self.objects.all(rt):  # stored before: from here on the hook keeps it
                self._indexes.note(rt.group_resource, obj, gone=False)
        try:
            async with trio.open_nursery() as nursery:
                for controller, wakeup in zip(self.controllers, self._wakeups, strict=True):
                    nursery.start_soon(run_controller, controller, wakeup, name=controller.name)
        finally:
            unsubscribe()
