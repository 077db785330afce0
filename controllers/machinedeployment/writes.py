"""Every write the deployment controller makes, each conditional on the resourceVersion it
read, so a pass acting on a stale cache fails (409, retried) rather than scaling twice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.api.meta import KubeObject
from kubetrio.controllers.machinedeployment.catchup import OwnWrites
from kubetrio.controllers.machinedeployment.revisions import replicas_annotations
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.controllers.machinedeployment")


class Writer:
    """``client`` writes machine objects (the control cluster); ``node_client`` Nodes (the
    target cluster, the same one unless the manager runs with two)."""

    def __init__(
        self, client: Client, events: EventRecorder, node_client: Client | None = None
    ) -> None:
        self.client = client
        self.node_client = node_client if node_client is not None else client
        self.events = events
        self.own = OwnWrites()

    async def event(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        self.events.record(obj, type_, reason, message)

    async def scale_set(
        self,
        deployment: MachineDeployment,
        machine_set: MachineSet,
        size: int,
        max_replicas: int,
        operation: str | None = None,
    ) -> MachineSet:
        """The set at ``size``, remembering the deployment size it was scaled for (MCM's
        ``scaleMachineSet``); a Normal ScalingMachineSet event when the size moved."""
        annotations = replicas_annotations(deployment.spec.replicas, max_replicas)
        current = machine_set.metadata.annotations
        stale = {k: v for k, v in annotations.items() if current.get(k) != v}
        if machine_set.spec.replicas == size and not stale:
            return machine_set
        patch: dict[str, Any] = {
            "metadata": {"resourceVersion": machine_set.resource_version, "annotations": stale},
            "spec": {"replicas": size},
        }
        updated = await self.client.patch(
            MachineSet, machine_set.name, patch, namespace=machine_set.namespace
        )
        if size != machine_set.spec.replicas:
            direction = operation or ("up" if size > machine_set.spec.replicas else "down")
            log.info(
                "scaled machine set",
                deployment=deployment.name,
                machineset=machine_set.name,
                replicas=size,
            )
            await self.event(
                deployment,
                "Normal",
                "ScalingMachineSet",
                f"Scaled {direction} machine set {machine_set.name} to {size}",
            )
        return updated

    async def patch_set(self, machine_set: MachineSet, ops: list[dict[str, Any]]) -> MachineSet:
        test = {"op": "test", "path": "/metadata/resourceVersion"}
        return await self.client.patch(
            MachineSet,
            machine_set.name,
            [{**test, "value": machine_set.resource_version}, *ops],
            namespace=machine_set.namespace,
            patch_type="json",
        )

    async def patch_deployment(
        self, deployment: MachineDeployment, ops: list[dict[str, Any]]
    ) -> MachineDeployment:
        test = {"op": "test", "path": "/metadata/resourceVersion"}
        written = await self.client.patch(
            MachineDeployment,
            deployment.name,
            [{**test, "value": deployment.resource_version}, *ops],
            namespace=deployment.namespace,
            patch_type="json",
        )
        self.own.wrote(written)
        return written

    async def write_status(
        self, deployment: MachineDeployment, status: Mapping[str, Any]
    ) -> MachineDeployment:
        """The whole status, replaced (a merge patch of its lists replaces them whole)."""
        full = {"failedMachines": None, "collisionCount": None, **status}
        written = await self.client.patch(
            MachineDeployment,
            deployment.name,
            {"metadata": {"resourceVersion": deployment.resource_version}, "status": full},
            namespace=deployment.namespace,
            subresource="status",
        )
        self.own.wrote(written)
        return written
