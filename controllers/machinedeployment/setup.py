"""Registering the MachineDeployment controller on a manager."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubetrio.api.core import Node
from kubetrio.api.machine import NODE_IN_PLACE_UPDATE, UPDATE_SUCCESSFUL, Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.retry import ShortRetry
from kubetrio.controllers.machinedeployment import webhooks
from kubetrio.controllers.machinedeployment.metrics import machinedeployment_metrics
from kubetrio.controllers.machinedeployment.reconciler import DeploymentReconciler
from kubetrio.controllers.machinedeployment.writes import Writer
from kubetrio.controllers.sharding import writes
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.controller.ratelimit import default_controller_rate_limiter
from kubetrio.runtime.manager.manager import Manager

COMPONENT = "machine-controller-manager"
NAME = "machinedeployment"


def deployment_of_machine(sets: Lister[MachineSet]) -> Any:
    """A machine's deployment through its set: Recreate waits for the last old machine to go."""

    def mapper(machine: Machine) -> Iterable[ObjectKey]:
        ref = machine.metadata.controller_ref()
        if ref is None or ref.kind != "MachineSet":
            return ()
        machine_set = sets.get(machine.namespace, ref.name)
        if machine_set is None or machine_set.metadata.uid != ref.uid:
            return ()
        owner = machine_set.metadata.controller_ref()
        if owner is None or owner.kind != "MachineDeployment":
            return ()
        return (ObjectKey(machine.namespace, owner.name),)

    return mapper


def _update_successful(machine: Machine) -> bool:
    condition = machine.condition(NODE_IN_PLACE_UPDATE)
    return condition is not None and condition.reason == UPDATE_SUCCESSFUL


def machine_deletion_or_update_done() -> Predicate:
    """A machine gone (Recreate waits for the last old one), or its in-place update seen
    successful (MCM's ``updateMachineToMachineDeployment``: it may move to the new set)."""
    return Predicate(
        create=lambda _m: False,
        update=lambda old, new: not _update_successful(old) and _update_successful(new),
    )


def setup(manager: Manager, config: Any) -> DeploymentReconciler:
    options: MachineOptions = config.machine
    namespace = options.namespace
    cache = manager.cache
    sets = cache.informer(MachineSet, namespace=namespace).lister
    machines = cache.informer(Machine, namespace=namespace).lister
    target = manager.cluster(TARGET)
    nodes = target.cache.informer(Node).lister
    work = writes(manager)
    writer = Writer(
        work.client, manager.event_recorder(COMPONENT, sharded=work.sharded), work.target
    )
    deployment_informer = cache.informer(MachineDeployment, namespace=namespace)
    deployment_informer.add_handler(writer.own.handler())
    deployments = deployment_informer.lister
    machinedeployment_metrics(manager.registry, deployments)
    reconciler = DeploymentReconciler(
        work.client,
        writer,
        deployments,
        sets,
        machines,
        nodes,
        hold_autoscaler=options.autoscaler_scale_down_annotation_during_rollout,
    )
    builder = (
        manager.controller(NAME)
        .rate_limiter(
            # MCM drops a key after 15 retries (≤ 82 s) and resyncs; ours never sleeps past
            # ShortRetry, so nothing waits out an outage's backoff once it is over.
            default_controller_rate_limiter(cap=ShortRetry)
        )
        .for_(MachineDeployment, namespace=namespace)
        .owns(MachineSet, namespace=namespace)
        .watches(
            Machine,
            deployment_of_machine(sets),
            machine_deletion_or_update_done(),
            namespace=namespace,
        )
    )
    if manager.shard is not None:
        builder = builder.sharded()  # its MachineSets follow it (owns)
    builder.complete(reconciler)
    if getattr(config, "webhooks", False):
        webhooks.register(manager)
    return reconciler
