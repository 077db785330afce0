"""Everything a machine reconcile reads and writes through, built once per manager."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass, field

import trio

from kubetrio.api.core import Node, Secret
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.machineset import MachineSet
from kubetrio.api.storage import VolumeAttachment
from kubetrio.controllers.machine.creationflows import CreationFlows
from kubetrio.controllers.machine.drain.discovery import eviction_supported
from kubetrio.controllers.machine.drain.drain import Drainer
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.durations import PoolDurations
from kubetrio.controllers.machine.failing import FailurePermits
from kubetrio.controllers.machine.metrics import MachineMetrics
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.status import DEPLOYMENT_LABEL, NODE_LABEL, StatusWriter
from kubetrio.controllers.safety.freeze import ControllerFreeze
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.queue import ObjectKey, WorkQueue
from kubetrio.runtime.util.gotext import go_quote

MACHINE_NODE_INDEX = "machine.node"
MACHINE_CLASS_INDEX = "machine.class"
MACHINE_DEPLOYMENT_INDEX = "machine.deployment"
ATTACHMENT_NODE_INDEX = "spec.nodeName"
# How long a pass waits for the cache to show this controller's own machine writes.
CACHE_CATCH_UP = 5.0


def machine_node(machine: Machine) -> Iterable[str]:
    node = machine.metadata.labels.get(NODE_LABEL)
    return (node,) if node else ()


def machine_class_name(machine: Machine) -> Iterable[str]:
    return (machine.spec.class_.name,) if machine.spec.class_.name else ()


def machine_deployment(machine: Machine) -> Iterable[str]:
    name = machine.metadata.labels.get(DEPLOYMENT_LABEL)
    return (name,) if name else ()


def attachment_node(attachment: VolumeAttachment) -> Iterable[str]:
    return (attachment.spec.node_name,) if attachment.spec.node_name else ()


@dataclass(slots=True)
class MachineContext:
    client: Client  # the control cluster's: Machines, MachineClasses, class Secrets
    target: Client  # the target cluster's: Nodes, VolumeAttachments, bootstrap tokens
    options: MachineOptions
    drivers: DriverRegistry
    machines: Lister[Machine]
    classes: Lister[MachineClass]
    secrets: Lister[Secret]  # the machine namespace's: class secrets
    tokens: Lister[Secret]  # kube-system's bootstrap tokens made by this controller
    nodes: Lister[Node]
    attachments: Lister[VolumeAttachment]
    machine_changes: InformerChanges
    drainer: Drainer
    status: StatusWriter
    metrics: MachineMetrics
    sets: Lister[MachineSet]  # meltdown protection finds a machine's deployment through them
    durations: PoolDurations  # MCM's per-pool step durations and failed joins
    permits: FailurePermits = field(default_factory=FailurePermits)
    freeze: ControllerFreeze = field(default_factory=ControllerFreeze)
    creating: CreationFlows = field(default_factory=CreationFlows)
    # The termination controller's queue, once registered: the main reconciler hands a
    # machine that turned up deleting over to it.
    terminations: WorkQueue[ObjectKey] | None = None
    _eviction_supported: bool | None = None

    async def eviction_supported(self) -> bool:
        """Asked of discovery once per manager: the API server does not change underneath."""
        if self._eviction_supported is None:
            self._eviction_supported = await eviction_supported(self.target)
        return self._eviction_supported

    def secret_data(self, machine_class: MachineClass) -> SecretData:
        """The class secret's data, decoded; a missing secret is no data (MCM: not an error).
        Values are never logged."""
        ref = machine_class.secret_ref
        if ref is None or not ref.name:
            return {}
        secret = self.secrets.get(ref.namespace or machine_class.namespace, ref.name)
        if secret is None:
            return {}
        data: dict[str, bytes] = {}
        for key, value in secret.data.items():
            try:
                data[key] = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                continue
        for key, text in secret.string_data.items():
            data[key] = text.encode()
        return data

    def user_data_missing(self, machine_class: MachineClass) -> str:
        """Why the class gives no ``userData``, naming the class and the Secret it refers to:
        the fix differs (add ``secretRef``, create the Secret, add the key)."""
        name = f"MachineClass {go_quote(machine_class.namespace + '/' + machine_class.name)}"
        ref = machine_class.secret_ref
        if ref is None or not ref.name:
            return f"{name} has no secretRef"
        where = f"{ref.namespace or machine_class.namespace}/{ref.name}"
        if self.secrets.get(ref.namespace or machine_class.namespace, ref.name) is None:
            return f"Secret {go_quote(where)} named by {name} (secretRef) does not exist"
        return f"Secret {go_quote(where)} named by {name} (secretRef) has no userData key"

    async def caught_up(self, key: ObjectKey) -> bool:
        """Whether the cache shows the machine at ``key`` at least as new as this controller's
        last status write of it, waiting up to ``CACHE_CATCH_UP`` for the write's watch event.
        A pass woken while the previous one still ran (a hand-over, a node event) would
        otherwise read the machine as it was before that pass and call the provider again."""

        def shown() -> bool:
            machine = self.machines.get(key.namespace, key.name)
            return machine is None or not self.status.behind(machine)

        if shown():
            return True
        return await self.machine_changes.wait_until(shown, trio.current_time() + CACHE_CATCH_UP)

    def hand_over(self, key: ObjectKey) -> None:
        """Put a deleting machine on the termination queue."""
        if self.terminations is not None:
            self.terminations.add(key)

    def machines_on_node(self, node: str) -> list[Machine]:
        return self.machines.by_index(MACHINE_NODE_INDEX, node)
