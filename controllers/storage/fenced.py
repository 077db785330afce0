"""A storage backend whose deletes need the leader fence
(``kubetrio.runtime.leaderelection.fence``): ``nodedelete`` and ``storagegc`` are leader-only,
and a deleted storage node is as final as a deleted Kubernetes object. Listing passes."""

from __future__ import annotations

from kubetrio.controllers.storage.backend import StorageBackend, StorageNode
from kubetrio.controllers.storage.client import HttpStorageBackend
from kubetrio.runtime.leaderelection.fence import Fence
from kubetrio.runtime.manager.manager import Manager


class FencedStorageBackend:
    def __init__(self, backend: StorageBackend, fence: Fence) -> None:
        self.backend = backend
        self.fence = fence

    async def list_nodes(self) -> list[StorageNode]:
        return await self.backend.list_nodes()

    async def delete_node(self, name: str) -> None:
        self.fence.check(f"delete storage node {name}")
        await self.backend.delete_node(name)


def fence_backend(backend: StorageBackend, fence: Fence) -> StorageBackend:
    """``backend`` behind ``fence``. Our HTTP backend lists before it deletes (the name's id),
    which may outlast the renew deadline: it asks the fence itself, right before the DELETE
    leaves; any other backend is asked at the call."""
    if isinstance(backend, HttpStorageBackend):
        return backend.fenced(fence)
    return FencedStorageBackend(backend, fence)


def fenced_backend(manager: Manager, backend: StorageBackend) -> StorageBackend:
    """``backend`` behind the manager's fence (as is, without leader election)."""
    return backend if manager.fence is None else fence_backend(backend, manager.fence)
