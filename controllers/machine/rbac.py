"""What the machine controller asks of the API server, and the safety loops its setup adds
(API-server watchdog, orphan-VM collector, unmanaged-node annotator): the rules of
``kubetrio-manager-role`` it needs. Each line names the code path that makes the request, so a
changed request and its rule change together."""

from __future__ import annotations

from kubetrio.api.core import (
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Secret,
)
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.machineset import MachineSet
from kubetrio.api.policy import PodDisruptionBudget
from kubetrio.api.storage import VolumeAttachment
from kubetrio.runtime import events
from kubetrio.runtime.gen.rbac import Permissions, cached, on

RBAC = (
    Permissions(
        cluster=(
            # the machine, class, secret and set informers; the drain's cache of the target
            *cached(Machine.KIND, MachineClass.KIND, MachineSet.KIND, Secret.KIND),
            *cached(Node.KIND, Pod.KIND, PersistentVolumeClaim.KIND, PersistentVolume.KIND),
            *cached(PodDisruptionBudget.KIND, VolumeAttachment.KIND),
            # finalizers and labels; the watchdog's probe GETs a Machine that does not exist
            on(Machine.KIND, "get", "patch"),
            on(Machine.KIND, "delete"),  # the machine of a Node deleted out from under it
            on(Machine.KIND, "patch", subresource="status"),  # phase and lastOperation
            on(MachineClass.KIND, "patch"),  # the class finalizer
            # bootstrap tokens: made per machine, read back when a create meets one made by an
            # earlier attempt, deleted once joined or deleted
            on(Secret.KIND, "create", "get", "delete"),
            # node template, unmanaged-node annotation, the node finalizer; the VM's node
            # deleted with it
            on(Node.KIND, "patch", "delete"),
            on(Node.KIND, "patch", subresource="status"),  # the Terminating condition
            on(Pod.KIND, "create", subresource="eviction"),  # the drain
            on(Pod.KIND, "delete"),  # a forced drain deletes instead of evicting
            on(VolumeAttachment.KIND, "delete"),  # a forced deletion's leftover attachments
        )
    )
    + events.RBAC
)
