"""Registering the safety loops that guard the machine controller (MCM runs them in the machine
controller's process, beside it): the API-server watchdog and its freeze metric, the orphan-VM
sweep and the not-managed-by-mcm node annotation."""

from __future__ import annotations

from collections.abc import Sequence

from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.safety.apiserver import ApiServer, ApiServerWatchdog, control_cluster
from kubetrio.controllers.safety.freeze import register_frozen_metric
from kubetrio.controllers.safety.orphan_vms import OrphanVmCollector
from kubetrio.controllers.safety.unmanaged_nodes import UnmanagedNodeAnnotator
from kubetrio.runtime.controller import Controller
from kubetrio.runtime.manager import Manager
from kubetrio.runtime.queue import ObjectKey, WorkQueue

MACHINE_CONTROLLER = "machine"


def machine_queue(manager: Manager) -> WorkQueue[ObjectKey]:
    for runnable in manager.runnables:
        if isinstance(runnable, Controller) and runnable.name == MACHINE_CONTROLLER:
            queue: WorkQueue[ObjectKey] = runnable.queue
            return queue
    raise LookupError(f"the {MACHINE_CONTROLLER!r} controller is not registered")


def setup_machine_safety(
    manager: Manager, ctx: MachineContext, api_servers: Sequence[ApiServer] | None = None
) -> None:
    """Call after the ``machine`` controller is registered: the watchdog requeues its machines.
    ``api_servers`` are the clusters to watch; by default the one cluster the manager
    talks to, probed as MCM probes its control cluster. With separate control and target
    clusters pass both (``control_cluster(...)``, ``target_cluster(...)``)."""
    servers = (
        api_servers
        if api_servers is not None
        else [control_cluster(ctx.client, ctx.options.namespace)]
    )
    register_frozen_metric(manager.registry, ctx.freeze)
    manager.add(ApiServerWatchdog(ctx, machine_queue(manager), servers))
    manager.add(OrphanVmCollector(ctx))
    manager.add(UnmanagedNodeAnnotator(ctx))
