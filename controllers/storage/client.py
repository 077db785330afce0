"""The HTTP client of a StorageOS-like REST API, implementing ``StorageBackend``.

The API (what the simulated storage service serves, under any base URL):

* ``GET  {base}/nodes``      → 200 ``{"items": [{"id": …, "name": …, "health": …}, …]}``
* ``DELETE {base}/nodes/{id}`` → 2xx deleted; 404 not found; 409 in use (online, or a master
  volume deployment without replicas); 423 locked (offline, lock not yet expired). Error bodies
  are ``{"error": "<reason>"}``.

A delete resolves the node's id from a list first, as StorageOS's api-manager does. Every reply
is validated (msgspec) and every failure becomes one of the typed errors with a one-line
message; a request that got no response at all is ``BackendUnavailable``, never a crash.
``timeout`` bounds each operation as a whole (list, or list + delete).
"""

from __future__ import annotations

import copy
import ssl
from urllib.parse import quote

import msgspec
import trio

from kubetrio.controllers.storage.backend import StorageNode
from kubetrio.controllers.storage.errors import (
    BackendError,
    BackendUnavailable,
    NodeInUse,
    NodeLocked,
    NodeNotFound,
)
from kubetrio.controllers.storage.metrics import StorageMetrics
from kubetrio.controllers.storage.options import DEFAULT_DELETE_TIMEOUT
from kubetrio.controllers.storage.transport import Endpoint, HttpReply, request
from kubetrio.runtime.leaderelection.fence import Fence

_MAX_REASON = 300


class _NodeList(msgspec.Struct):
    items: list[StorageNode]


class _ErrorBody(msgspec.Struct):
    error: str = ""


class HttpStorageBackend:
    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = DEFAULT_DELETE_TIMEOUT,
        metrics: StorageMetrics | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self.timeout = timeout
        self.metrics = metrics
        self.ssl_context = ssl_context
        self.fence: Fence | None = None

    def fenced(self, fence: Fence) -> HttpStorageBackend:
        """The same backend, whose DELETE leaves only while ``fence`` proves the lease held."""
        twin = copy.copy(self)
        twin.fence = fence
        return twin

    async def list_nodes(self) -> list[StorageNode]:
        return await self._list(trio.current_time() + self.timeout)

    async def delete_node(self, name: str) -> None:
        deadline = trio.current_time() + self.timeout
        node = next((n for n in await self._list(deadline) if n.name == name), None)
        if node is None:
            raise NodeNotFound(name)
        path = f"/nodes/{quote(node.id, safe='')}"
        if self.fence is not None:
            self.fence.check(f"delete storage node {name}")  # after the list, however long
        reply = await self._call("delete", "DELETE", path, deadline)
        if 200 <= reply.status < 300:
            return
        reason = _reason(reply.body)
        if reply.status == 404:
            raise NodeNotFound(name, reason)
        if reply.status == 409:
            raise NodeInUse(name, reason)
        if reply.status == 423:
            raise NodeLocked(name, reason)
        self._count_error("delete")
        raise BackendError(
            f"storage node {name}: DELETE {self.endpoint.url(path)} answered {reply.status}"
            + (f": {reason}" if reason else ""),
            reply.status,
            reason,
        )

    # -- plumbing

    async def _list(self, deadline: float) -> list[StorageNode]:
        reply = await self._call("list", "GET", "/nodes", deadline)
        where = f"GET {self.endpoint.url('/nodes')}"
        if reply.status != 200:
            self._count_error("list")
            reason = _reason(reply.body)
            raise BackendError(
                f"storage backend: {where} answered {reply.status}"
                + (f": {reason}" if reason else ""),
                reply.status,
                reason,
            )
        try:
            return msgspec.json.decode(reply.body, type=_NodeList).items
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            self._count_error("list")
            raise BackendError(f"storage backend: {where}: invalid reply: {error}", 200) from None

    async def _call(self, op: str, method: str, path: str, deadline: float) -> HttpReply:
        """One request, given up at ``deadline`` (the operation's, shared by its requests)."""
        started = trio.current_time()
        try:
            with trio.move_on_at(deadline):
                return await request(self.endpoint, method, path, ssl_context=self.ssl_context)
            raise BackendUnavailable(
                f"storage backend: {method} {self.endpoint.url(path)}: no answer within "
                f"{self.timeout:g}s"
            )
        except BackendUnavailable:
            self._count_error(op)
            raise
        finally:
            if self.metrics is not None:
                self.metrics.request_duration.labels(op).observe(trio.current_time() - started)

    def _count_error(self, op: str) -> None:
        if self.metrics is not None:
            self.metrics.request_errors.labels(op).inc()


def _reason(body: bytes) -> str:
    """The backend's ``error`` text, else the start of the body; always one line."""
    try:
        text = msgspec.json.decode(body, type=_ErrorBody).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        text = body[:_MAX_REASON].decode(errors="replace")
    return " ".join(text.split())[:_MAX_REASON]


async def list_storage_nodes(base_url: str, limit_seconds: float = 5.0) -> list[StorageNode]:
    """The backend's nodes with their health, for a live view (``kubetrio run --embedded``).
    Raises ``StorageError`` when the backend cannot answer within ``limit_seconds``."""
    return await HttpStorageBackend(base_url, timeout=limit_seconds).list_nodes()
