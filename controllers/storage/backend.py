"""The storage-backend protocol the node-delete and storage-GC controllers are written against.

A backend keeps its own list of nodes, keyed by the Kubernetes node name. The controllers need
two operations: list them (the GC diffs that list against the cluster's Nodes) and delete one
by name (the backend resolves its own ids). Refusals are typed (``errors``), so an
implementation for another storage system only has to map its answers onto them.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

# StorageOS's CSI driver: its key in a Node's CSI node-id annotation marks a storage node.
DEFAULT_CSI_DRIVER = "csi.storageos.com"


class StorageNode(msgspec.Struct, frozen=True, kw_only=True):
    """One node as the backend sees it. ``health`` is the backend's word ("online",
    "offline", …): shown to people, never interpreted by the controllers."""

    id: str
    name: str
    health: str = ""


class StorageBackend(Protocol):
    async def list_nodes(self) -> list[StorageNode]:
        """Every node the backend knows. Raises ``StorageError``."""
        ...

    async def delete_node(self, name: str) -> None:
        """Forget the node called ``name``. Raises ``NodeNotFound``, ``NodeInUse``,
        ``NodeLocked``, ``BackendUnavailable`` or ``BackendError``."""
        ...
