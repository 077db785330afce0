"""What the MachineSet controller asks of the API server (``kubetrio-manager-role``)."""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.runtime import events
from kubetrio.runtime.gen.rbac import Permissions, cached, on

RBAC = (
    Permissions(
        cluster=(
            *cached(MachineSet.KIND, Machine.KIND),
            # a Failed machine preserved through its node's annotation is not replaced
            *cached(Node.KIND),
            # a fresh copy before acting on a stale-looking set
            on(MachineSet.KIND, "get"),
            on(MachineSet.KIND, "patch", subresource="status"),  # replicas and conditions
            # replicas made and removed; adoption and release; the deletion priority mark
            on(Machine.KIND, "create", "delete", "patch"),
            on(Machine.KIND, "patch", subresource="status"),
        )
    )
    + events.RBAC
)
