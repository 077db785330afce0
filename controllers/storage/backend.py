"""The storage-backend protocol the node-delete and storage-GC controllers are written against,
and the options both read from the manager's config.

A backend keeps its own list of nodes, keyed by the Kubernetes node name. The controllers need
two operations: list them (the GC diffs that list against the cluster's Nodes) and delete one
by name (the backend resolves its own ids). Refusals are typed (``errors``), so an
implementation for another storage system only has to map its answers onto them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

DEFAULT_CSI_DRIVER = "csi.storageos.com"
DEFAULT_DELETE_TIMEOUT = 20.0
DEFAULT_GC_DELAY = 30.0
DEFAULT_GC_INTERVAL = 3600.0


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


@dataclass(frozen=True, slots=True)
class StorageOptions:
    """The ``storage`` section of the config, read by duck typing: controllers must not import
    the CLI's config module (the CLI composes controllers, never the reverse), and tests may
    pass any object with these fields."""

    backend_url: str | None = None
    csi_driver: str = DEFAULT_CSI_DRIVER
    delete_timeout: float = DEFAULT_DELETE_TIMEOUT
    gc_delay: float = DEFAULT_GC_DELAY
    gc_interval: float = DEFAULT_GC_INTERVAL

    @classmethod
    def from_config(cls, config: Any) -> StorageOptions:
        section = getattr(config, "storage", None)
        if section is None:
            return cls()
        default = cls()
        return cls(
            backend_url=getattr(section, "backend_url", None) or None,
            csi_driver=str(getattr(section, "csi_driver", default.csi_driver)),
            delete_timeout=float(getattr(section, "delete_timeout", default.delete_timeout)),
            gc_delay=float(getattr(section, "gc_delay", default.gc_delay)),
            gc_interval=float(getattr(section, "gc_interval", default.gc_interval)),
        )
