"""A cluster a manager talks to: one client and its informer cache (controller-runtime's
``cluster.Cluster``).

A manager always has its primary cluster (its own ``client`` and ``cache``: leader election,
and whatever a controller registers without naming a cluster). MCM runs with its Machines in
one cluster (the control cluster) and their Nodes in another (the target cluster); the second
one is added with ``manager.add_cluster("target", client)``, and a controller's builder watches
it with ``cluster=``. Every cluster's cache is started and synced before any controller runs,
and each has its own ``/readyz`` check, so a probe says which cluster is not synced.
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.cache.syncfailure import CacheSyncError
from kubetrio.runtime.client.discovery import check_served
from kubetrio.runtime.client.typed import Client

__all__ = ["Cluster", "check_clusters_served", "wait_for_clusters"]


@dataclass(frozen=True, slots=True)
class Cluster:
    """``name`` is empty for the manager's primary cluster (messages then name no cluster)."""

    name: str
    client: Client
    cache: InformerCache

    def describe(self, what: str) -> str:
        """``what`` said of this cluster: "informers for nodes (target cluster)"."""
        return f"{what} ({self.name} cluster)" if self.name else what

    def pending(self) -> list[str]:
        """The informers that have not listed yet, by resource."""
        return [i.name for i in self.cache.informers if not i.has_synced]


async def check_clusters_served(clusters: list[Cluster]) -> None:
    """``UnservedKinds`` for the first cluster that lacks a custom kind its informers list."""
    for cluster in clusters:
        kinds = {informer.kind.KIND for informer in cluster.cache.informers}
        await check_served(cluster.cache.client, kinds, cluster.name)


async def wait_for_clusters(clusters: list[Cluster]) -> None:
    """Until every cluster's cache synced. Waits on all at once, so a LIST refused for good in
    any cluster ends the wait at once (a ``CacheSyncError`` naming that cluster) instead of
    behind another cluster's slow sync."""
    failure: CacheSyncError | None = None

    async def wait(cluster: Cluster, cancel_scope: trio.CancelScope) -> None:
        nonlocal failure
        try:
            await cluster.cache.wait_for_sync()
        except CacheSyncError as error:
            if failure is None:
                failure = (
                    CacheSyncError(f"{cluster.name} cluster: {error}", error.error)
                    if cluster.name
                    else error
                )
            cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        for cluster in clusters:
            nursery.start_soon(wait, cluster, nursery.cancel_scope)
    if failure is not None:
        raise failure
