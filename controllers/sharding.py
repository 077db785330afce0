"""Which built-in controllers shard, and where their side effects go when they do.

With the manager's sharding options (``kubetrio run --sharding``) the per-object controllers
run on every replica, each over the objects assigned to its shard: ``machine`` (its main and
termination queues, per Machine), ``machineset`` and ``machinedeployment``. Machines follow
their MachineSet and MachineSets their MachineDeployment by controller owner reference, so one
replica holds a whole deployment. Their writes, events and provider calls leave through the
shard Lease's fence instead of the leader's.

Global work stays on the leader: the safety controller's overshooting checks (counts across
every MachineSet of a deployment), the orphan-VM sweep and unmanaged-node annotation (every VM
against every Machine), the MachineClass finalizer (a class is in use while any machine uses
it), the machine controller's Node queue (Nodes live in the target cluster, which the sharder
does not label), ``nodedelete`` (it acts on Nodes already deleted, which no label or drain
reaches) and ``storagegc`` (the whole backend against the whole cluster).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrio.controllers.clusters import TARGET
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.fence import Fence
from kubetrio.runtime.manager.manager import Manager

__all__ = ["Writes", "writes"]


@dataclass(frozen=True, slots=True)
class Writes:
    """Where one controller's side effects go: both clusters' clients and the fence provider
    calls pass, all fenced by one Lease; ``sharded``: by this replica's shard Lease."""

    client: Client
    target: Client
    fence: Fence | None
    sharded: bool


def writes(manager: Manager) -> Writes:
    """A per-object controller's: the shard's when the manager shards, else the leader's."""
    if manager.shard is None:
        return Writes(manager.client, manager.cluster(TARGET).client, manager.fence, False)
    return Writes(manager.shard_client(), manager.shard_client(TARGET), manager.shard.fence, True)
