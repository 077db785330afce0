"""The node-delete reconciler: a storage node's Kubernetes Node is gone, so delete it in the
backend too (StorageOS api-manager's ``node-delete`` controller).

Reconcile of a Node key (only deleted storage nodes are ever queued):

* the Node exists again (re-created under its name): nothing to delete;
* backend delete (bounded by ``storage.deleteTimeout``, 20 s) succeeds, or the backend does not
  know the node: done;
* in use, locked, or any other failure: log the backend's reason, count it, and look again after
  the next delay of an exponential rate limiter (5 ms doubling). The refusal is expected — the
  backend holds a node for about a minute after it goes away — so it is a warning line and a
  ``requeue_after``, not an exception: raising would log a traceback and count a panic.

Unlike StorageOS (whose backoff caps at 1000 s) the delay caps at ``RETRY_CAP`` seconds, so a
node blocked for long by a volume is deleted within seconds of the volume going, not minutes.
Events go on the deleted Node (by its last known state): a Warning when the reason for a
refusal changes, a Normal one when the storage node is gone.
"""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.controllers.storage.backend import StorageBackend
from kubetrio.controllers.storage.errors import NodeNotFound, StorageError
from kubetrio.controllers.storage.metrics import StorageMetrics, delete_result
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.controller.ratelimit import (
    BucketRateLimiter,
    ExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.log import get_logger

RETRY_BASE = 0.005
RETRY_CAP = 10.0

log = get_logger("kubetrio.nodedelete")


def retry_limiter() -> MaxOfRateLimiter:
    """client-go's default controller limiter with the per-node delay capped at RETRY_CAP."""
    return MaxOfRateLimiter(
        ExponentialFailureRateLimiter(base=RETRY_BASE, cap=RETRY_CAP),
        BucketRateLimiter(qps=10.0, burst=100),
    )


class NodeDeleteReconciler:
    def __init__(
        self,
        backend: StorageBackend,
        nodes: Lister[Node],
        metrics: StorageMetrics,
        *,
        recorder: EventRecorder | None = None,
        retry: RateLimiter | None = None,
    ) -> None:
        self.backend = backend
        self.nodes = nodes
        self.metrics = metrics
        self.recorder = recorder
        self.retry = retry if retry is not None else retry_limiter()
        self._last_seen: dict[str, Node] = {}  # deleted storage nodes still to be settled
        self._reported: dict[str, str] = {}  # node -> the refusal last reported in an Event

    def deleted(self, node: Node) -> None:
        """The last known state of a deleted storage node (the predicate calls this)."""
        self._last_seen[node.metadata.name] = node

    async def reconcile(self, key: ObjectKey) -> Result:
        name = key.name
        if self.nodes.get("", name) is not None:
            self._settle(key)
            return Result()
        try:
            await self.backend.delete_node(name)
        except NodeNotFound as error:
            self.metrics.node_deletes.labels(delete_result(error)).inc()
            log.info("storage node already gone", node=name, reason=error.reason)
            self._settle(key)
            return Result()
        except StorageError as error:
            return await self._refused(key, error)
        self.metrics.node_deletes.labels(delete_result(None)).inc()
        retries = self.retry.num_requeues(key)
        log.info("storage node deleted", node=name, retries=retries)
        await self._event(name, "Normal", "StorageNodeDeleted", "storage node deleted")
        self._settle(key)
        return Result()

    async def _refused(self, key: ObjectKey, error: StorageError) -> Result:
        name = key.name
        self.metrics.node_deletes.labels(delete_result(error)).inc()
        delay = self.retry.when(key)
        # A warning when the reason is new; the retries that follow it (every 10 s while a
        # volume pins the node) are info lines, so the log stays readable for hours.
        new_reason = self._reported.get(name) != error.reason
        (log.warning if new_reason else log.info)(
            "storage node delete failed, will retry",
            node=name,
            reason=error.reason,
            error=str(error),
            retry_in=round(delay, 3),
            retries=self.retry.num_requeues(key),
        )
        if new_reason:
            self._reported[name] = error.reason
            await self._event(name, "Warning", "StorageNodeDeleteFailed", str(error))
        return Result(requeue_after=delay)

    async def _event(self, name: str, type_: str, reason: str, message: str) -> None:
        node = self._last_seen.get(name)
        if self.recorder is not None and node is not None:
            self.recorder.record(node, type_, reason, message)

    def _settle(self, key: ObjectKey) -> None:
        self.retry.forget(key)
        self._last_seen.pop(key.name, None)
        self._reported.pop(key.name, None)
