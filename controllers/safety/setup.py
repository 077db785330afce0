"""Registering MCM's safety loops. Those that guard the machine controller (MCM runs them in
the machine controller's process) come with it: the API-server watchdog and its freeze metric,
the orphan-VM sweep and the not-managed-by-mcm node annotation. The overshooting guard of
MachineSets (MCM runs it beside the MachineSet controller) is the ``safety`` controller."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.safety.apiserver import ApiServer, ApiServerWatchdog, control_cluster
from kubetrio.controllers.safety.freeze import register_frozen_metric
from kubetrio.controllers.safety.orphan_vms import OrphanVmCollector
from kubetrio.controllers.safety.overshooting import OvershootingGuard
from kubetrio.controllers.safety.unmanaged_nodes import UnmanagedNodeAnnotator
from kubetrio.runtime.controller.controller import Controller
from kubetrio.runtime.controller.queue import ObjectKey, WorkQueue
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import shard_label

MACHINE_CONTROLLER = "machine"
COMPONENT = "safety-controller"


def machine_queue(manager: Manager) -> WorkQueue[ObjectKey]:
    for runnable in manager.runnables:
        if isinstance(runnable, Controller) and runnable.name == MACHINE_CONTROLLER:
            queue: WorkQueue[ObjectKey] = runnable.queue
            return queue
    raise LookupError(f"the {MACHINE_CONTROLLER!r} controller is not registered")


def setup_machine_safety(
    manager: Manager,
    ctx: MachineContext,
    api_servers: Sequence[ApiServer] | None = None,
    *,
    leader_ctx: MachineContext | None = None,
) -> None:
    """Call after the ``machine`` controller is registered: the watchdog requeues its machines.
    ``api_servers`` are the clusters to watch; by default the one cluster the manager
    talks to, probed as MCM probes its control cluster. With separate control and target
    clusters pass both (``control_cluster(...)``, ``target_cluster(...)``).

    With sharding the watchdog guards each replica's own machine controller, so it runs on
    every replica while it holds its shard Lease and resets only its shard's machines; the
    orphan-VM sweep and the node annotator look at every machine and stay on the leader
    (``leader_ctx``, writing through the leader's clients)."""
    servers = (
        api_servers
        if api_servers is not None
        else [control_cluster(ctx.client, ctx.options.namespace)]
    )
    register_frozen_metric(manager.registry, ctx.freeze)
    watchdog = ApiServerWatchdog(ctx, machine_queue(manager), servers)
    if manager.shard is not None:
        watchdog.needs_leader_election = False
        watchdog.needs_shard_lease = True
        watchdog.label_selector = f"{shard_label(manager.shard.ring)}={manager.shard.id}"
    manager.add(watchdog)
    manager.add(OrphanVmCollector(leader_ctx or ctx))
    manager.add(UnmanagedNodeAnnotator(leader_ctx or ctx))


def setup(manager: Manager, config: Any) -> OvershootingGuard:
    """The overshooting guard over the machine namespace's MachineSets; returned for tests."""
    options: MachineOptions = config.machine
    namespace = options.namespace
    cache = manager.cache
    guard = OvershootingGuard(
        manager.client,
        cache.informer(Machine, namespace=namespace),
        cache.informer(MachineSet, namespace=namespace).lister,
        cache.informer(MachineDeployment, namespace=namespace).lister,
        manager.event_recorder(COMPONENT),
        safety_up=options.safety_up,
        safety_down=options.safety_down,
        period=options.safety_overshooting_period,
    )
    manager.add(guard)
    return guard
