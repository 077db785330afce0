"""The storage GC: a periodic pass that deletes backend nodes whose Kubernetes Node is gone.

The node-delete controller only sees deletions while it runs; nodes deleted while the manager
was down (or whose delete it gave up on) stay in the backend. This pass catches them, as
StorageOS api-manager's external-object-sync does: list the backend's nodes, compare with all
Kubernetes Nodes in the shared cache (no annotation filter: any Node keeps its name alive),
delete the extra ones. It runs once ``delay`` after the manager starts, then every ``interval``;
an interval of 0 disables it, and a delay of 0 means StorageOS's 10 s. Errors are logged and
counted, never fatal: the next pass tries again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

import trio

from kubetrio.api.core import Node
from kubetrio.controllers.storage.backend import StorageBackend
from kubetrio.controllers.storage.errors import NodeInUse, NodeLocked, NodeNotFound, StorageError
from kubetrio.controllers.storage.metrics import StorageMetrics, delete_result
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.leaderelection.fence import NotLeader
from kubetrio.runtime.util.log import get_logger

# StorageOS api-manager turns a zero GC delay into this.
ZERO_DELAY_SECONDS = 10.0
# Nodes the backend refused (in use, locked, unreachable) are tried again between passes with
# this backoff, like the node-delete controller's: a node deleted while the manager was down
# is usually still locked at the first pass, and an hour's wait for the next one is too long.
RETRY_FIRST = 0.5
RETRY_CAP = 10.0

log = get_logger("kubetrio.storagegc")


class StorageGC:
    """A manager runnable (leader only: it deletes)."""

    needs_leader_election = True

    def __init__(
        self,
        backend: StorageBackend,
        nodes: Informer[Node],
        metrics: StorageMetrics,
        *,
        delay: float,
        interval: float,
    ) -> None:
        self.backend = backend
        self.nodes = nodes
        self.metrics = metrics
        self.delay = delay if delay > 0 else ZERO_DELAY_SECONDS
        self.interval = interval

    async def run(self) -> None:
        if self.interval <= 0:
            log.info("storage GC disabled (interval 0)")
            return
        log.info("storage GC scheduled", first_in=self.delay, interval=self.interval)
        await trio.sleep(self.delay)
        due = trio.current_time()
        while True:
            refused = await self._pass(self.collect)
            # A ticker: passes stay on the start + k * interval grid; missed ticks are dropped.
            due += self.interval
            now = trio.current_time()
            if due <= now:
                due += ((now - due) // self.interval + 1) * self.interval
            with trio.move_on_at(due):
                await self._retry(refused)
            await trio.sleep_until(due)

    async def _pass(self, work: Callable[[], Awaitable[set[str]]]) -> set[str]:
        """Run ``work``; any failure is logged and counted, never the manager's end (a
        ``StorageBackend`` from a plugin may raise anything)."""
        try:
            return await work()
        except NotLeader as error:
            log.warning("storage GC pass stopped: not the leader", error=str(error))
            return set()
        except Exception:
            self.metrics.gc_errors.inc()
            log.exception("storage GC pass failed")
            return set()

    async def _retry(self, refused: set[str]) -> None:
        """Try the refused nodes again, backing off, until none is left."""
        delay = RETRY_FIRST
        while refused:
            await trio.sleep(delay)
            delay = min(delay * 2, RETRY_CAP)
            refused = await self._pass(partial(self._delete_extra, set(refused)))

    async def collect(self) -> set[str]:
        """One pass; the names of the extra storage nodes the backend refused to delete."""
        self.metrics.gc_runs.inc()
        if not self.nodes.has_synced:
            # An empty cache would make every backend node look orphaned.
            log.warning("storage GC skipped: the Node cache has not synced")
            self.metrics.gc_errors.inc()
            return set()
        try:
            storage_nodes = await self.backend.list_nodes()
        except StorageError as error:
            self.metrics.gc_errors.inc()
            log.warning("storage GC could not list the backend's nodes", error=str(error))
            return set()
        extra = {n.name for n in storage_nodes}
        refused = await self._delete_extra(extra)
        log.info("storage GC pass done", backend_nodes=len(storage_nodes), refused=len(refused))
        return refused

    async def _delete_extra(self, names: set[str]) -> set[str]:
        """Delete those of ``names`` that no Kubernetes Node carries; the refused ones."""
        kubernetes = {node.metadata.name for node in self.nodes.lister.list()}
        refused: set[str] = set()
        for name in sorted(names - kubernetes):
            try:
                await self.backend.delete_node(name)
            except NodeNotFound as error:
                self.metrics.node_deletes.labels(delete_result(error)).inc()
                continue
            except StorageError as error:
                refused.add(name)
                self.metrics.node_deletes.labels(delete_result(error)).inc()
                self.metrics.gc_errors.inc()
                # In use or locked is the backend holding a node as it should (the next pass
                # tries again); anything else is the backend failing.
                expected = isinstance(error, NodeInUse | NodeLocked)
                (log.info if expected else log.warning)(
                    "storage GC could not delete a node", node=name, reason=error.reason
                )
                continue
            self.metrics.node_deletes.labels(delete_result(None)).inc()
            self.metrics.gc_deleted.inc()
            log.info("storage GC deleted a node without a Kubernetes Node", node=name)
        return refused
