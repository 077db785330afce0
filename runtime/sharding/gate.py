"""The shard side of a sharded controller: reconcile only what is ours, and let go on a drain.

Every key passes the gate before the controller's reconciler sees it:

* an object not in this shard's cache (its informers select the shard label with this shard's
  id) is not ours, or not ours any more: the key is dropped without calling the reconciler
  (which would take "not found" for a deletion);
* an object carrying the drain label is let go: both labels are removed in one write, guarded
  by its resourceVersion, and the reconciler is not called. The work queue never hands out a
  key that is being reconciled, so that write leaves only after any reconcile of the object
  already running has finished; and none starts afterwards, since the object leaves this
  shard's cache as soon as the write is seen (and until then the drain label turns it away);
* anything else is reconciled.

A kind may be reconciled by more than one controller of the shard (the machine controller's
main and termination queues): each queue keeps its own keys apart, so the gates of one kind
share an ``InFlight`` and the acknowledgement waits until none of them is reconciling the
object.

Writes go through the shard's fenced client: once the shard cannot prove its Lease (frozen,
cut off), nothing leaves, acknowledgements included.
"""

from __future__ import annotations

from typing import Any

import trio

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Reconciler, Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.sharding.labels import drain_label, shard_label
from kubetrio.runtime.sharding.metaview import metadata_view
from kubetrio.runtime.sharding.metrics import ShardingMetrics
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.sharding")


class InFlight:
    """The keys of one kind being reconciled by any of a shard's controllers. Every reconcile
    passes here, so entering and leaving are plain dict updates; an event is made only for a
    key a drain waits on."""

    def __init__(self) -> None:
        self._busy: dict[ObjectKey, int] = {}
        self._waiting: dict[ObjectKey, trio.Event] = {}

    def enter(self, key: ObjectKey) -> None:
        self._busy[key] = self._busy.get(key, 0) + 1

    def leave(self, key: ObjectKey) -> None:
        count = self._busy[key] - 1
        if count:
            self._busy[key] = count
            return
        del self._busy[key]
        done = self._waiting.pop(key, None)
        if done is not None:
            done.set()

    async def idle(self, key: ObjectKey) -> None:
        """Return once no controller is reconciling ``key``."""
        while key in self._busy:
            done = self._waiting.get(key)
            if done is None:
                done = self._waiting[key] = trio.Event()
            await done.wait()


class ShardGate:
    """Wraps a sharded controller's reconciler (the builder's ``.sharded()`` puts it there)."""

    def __init__(
        self,
        reconciler: Reconciler[ObjectKey],
        kind: type[KubeObject],
        lister: Lister[Any],
        client: Client,
        *,
        ring: str,
        shard_id: str,
        metrics: ShardingMetrics | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        self.reconciler = reconciler
        self.kind = kind
        self.lister = lister
        self.client = client
        self.ring = ring
        self.shard_id = shard_id
        self.shard_label = shard_label(ring)
        self.drain_label = drain_label(ring)
        self.in_flight = in_flight or InFlight()
        self._acknowledged = (
            metrics.acknowledged.labels(ring, shard_id) if metrics is not None else None
        )

    async def reconcile(self, key: ObjectKey) -> Result:
        obj = self.lister.get(key.namespace, key.name)
        if obj is None:
            return Result()
        labels = obj.metadata.labels
        if labels.get(self.shard_label) != self.shard_id:
            return Result()  # a stale event or timer: the cache selects ours only
        if self.drain_label in labels:
            await self._let_go(key, obj)
            return Result()
        in_flight = self.in_flight
        in_flight.enter(key)
        try:
            return await self.reconciler.reconcile(key)
        finally:
            in_flight.leave(key)

    async def _let_go(self, key: ObjectKey, obj: KubeObject) -> None:
        await self.in_flight.idle(key)  # another controller of this kind finishes first
        meta = obj.metadata
        try:
            await self.client.patch(
                metadata_view(self.kind),
                meta.name,
                {
                    "metadata": {
                        "resourceVersion": meta.resource_version,
                        "labels": {self.shard_label: None, self.drain_label: None},
                    }
                },
                namespace=meta.namespace,
            )
        except ApiError as error:
            if error.status == 404:
                return  # gone: nothing to let go of
            raise  # a conflict: the newer version comes through the cache and we try again
        if self._acknowledged is not None:
            self._acknowledged.inc()
        log.info(
            "let go of drained object", shard=self.shard_id, object=f"{meta.namespace}/{meta.name}"
        )
