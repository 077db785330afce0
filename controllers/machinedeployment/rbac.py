"""What the MachineDeployment controller asks of the API server (``kubetrio-manager-role``)."""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.runtime import events
from kubetrio.runtime.gen.rbac import Permissions, cached, on

RBAC = (
    Permissions(
        cluster=(
            *cached(MachineDeployment.KIND, MachineSet.KIND, Machine.KIND, Node.KIND),
            # the finalizer, rollback and revision annotations; a fresh copy for a rollback
            on(MachineDeployment.KIND, "get", "patch"),
            on(MachineDeployment.KIND, "patch", subresource="status"),
            # new sets made, scaled and annotated; old ones pruned; a fresh copy for the
            # name a new set gets
            on(MachineSet.KIND, "create", "get", "patch", "delete"),
            on(Machine.KIND, "patch"),  # the autoscaler's scale-down-disabled annotation
            on(Node.KIND, "patch"),  # taints in place, the autoscaler's annotation
        )
    )
    + events.RBAC
)
