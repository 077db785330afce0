"""The node-delete reconciler: a storage node's Kubernetes Node is gone, so delete it in the
backend too (StorageOS api-manager's ``node-delete`` controller).

Reconcile of a Node key (only deleted storage nodes are ever queued):

* the Node exists again (re-created under its name): nothing to delete;
* backend delete (bounded by ``storage.deleteTimeout``, 20 s) succeeds, or the backend does not
  know the node: done;
* in use, locked, or any other failure: log the backend's reason, count it, and look again after
  the next delay of an exponential rate limiter (5 ms doubling). The refusal is expected — the
  backend holds a node for about a minute after it goes away — so it is a ``requeue_after``, not
  an exception (raising would log a traceback and count a panic), and an info line: a warning
  means a person should look, which is true only once a node stays in use or locked for longer
  than ``STUCK_AFTER``, or when the backend fails in a way it should not.

Unlike StorageOS (whose backoff caps at 1000 s) the delay caps at ``RETRY_CAP`` seconds, so a
node blocked for long by a volume is deleted within seconds of the volume going, not minutes.
Events go on the deleted Node (by its last known state): a Warning when the reason for a
refusal changes, a Normal one when the storage node is gone.
"""

from __future__ import annotations

import trio

from kubetrio.api.core import Node
from kubetrio.controllers.storage.backend import StorageBackend
from kubetrio.controllers.storage.errors import NodeInUse, NodeLocked, NodeNotFound, StorageError
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
# How long a deleted node may stay in use or locked in the backend before it is worth a warning:
# well past the backend's own lock (about a minute), so only a node something really pins.
STUCK_AFTER = 300.0

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
        self._waiting_since: dict[str, float] = {}  # node -> first expected refusal (trio time)
        self._stuck: set[str] = set()  # nodes already warned about

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
        new_reason = self._reported.get(name) != error.reason
        fields = {
            "node": name,
            "reason": error.reason,
            "retry_in": round(delay, 3),
            "retries": self.retry.num_requeues(key),
        }
        if isinstance(error, NodeInUse | NodeLocked):
            self._log_wait(name, fields)
        else:
            # A failure of the backend itself: a warning when the reason is new; the retries
            # that follow it are info lines, so the log stays readable for hours.
            (log.warning if new_reason else log.info)(
                "storage node delete failed, will retry", error=str(error), **fields
            )
        if new_reason:
            self._reported[name] = error.reason
            await self._event(name, "Warning", "StorageNodeDeleteFailed", str(error))
        return Result(requeue_after=delay)

    def _log_wait(self, name: str, fields: dict[str, object]) -> None:
        """Info while the backend holds the node as it should; one warning once it has held it
        for longer than ``STUCK_AFTER``."""
        since = self._waiting_since.setdefault(name, trio.current_time())
        waited = trio.current_time() - since
        if waited > STUCK_AFTER and name not in self._stuck:
            self._stuck.add(name)
            log.warning(
                "storage node still not deletable, will keep retrying",
                waited=f"{waited:.0f}s",
                **fields,
            )
        else:
            log.info("storage node not deletable yet, will retry", **fields)

    async def _event(self, name: str, type_: str, reason: str, message: str) -> None:
        node = self._last_seen.get(name)
        if self.recorder is not None and node is not None:
            self.recorder.record(node, type_, reason, message)

    def _settle(self, key: ObjectKey) -> None:
        self.retry.forget(key)
        self._last_seen.pop(key.name, None)
        self._reported.pop(key.name, None)
        self._waiting_since.pop(key.name, None)
        self._stuck.discard(key.name)
