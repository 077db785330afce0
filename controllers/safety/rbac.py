"""What the overshooting guard (the ``safety`` controller) asks of the API server
(``kubetrio-manager-role``): it freezes and unfreezes sets and deployments."""

from __future__ import annotations

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.runtime import events
from kubetrio.runtime.gen.rbac import Permissions, cached, on

RBAC = (
    Permissions(
        cluster=(
            *cached(Machine.KIND, MachineSet.KIND, MachineDeployment.KIND),
            # a fresh copy, then the frozen label and condition
            on(MachineSet.KIND, "get", "patch"),
            on(MachineSet.KIND, "patch", subresource="status"),
            on(MachineDeployment.KIND, "get", "patch"),
            on(MachineDeployment.KIND, "patch", subresource="status"),
        )
    )
    + events.RBAC
)
