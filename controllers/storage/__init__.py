"""The storage backend the storage-node controllers (``nodedelete``, ``storagegc``) talk to: the
``StorageBackend`` protocol, its typed errors, the HTTP client of a StorageOS-like REST API,
the ``kubetrio_storage_*`` metrics, the controllers' options, and (in ``sim``) the simulated
storage service."""

from kubetrio.controllers.storage.backend import StorageBackend, StorageNode
from kubetrio.controllers.storage.client import HttpStorageBackend, list_storage_nodes
from kubetrio.controllers.storage.errors import (
    BackendError,
    BackendUnavailable,
    NodeError,
    NodeInUse,
    NodeLocked,
    NodeNotFound,
    StorageError,
)
from kubetrio.controllers.storage.metrics import StorageMetrics, delete_result, storage_metrics
from kubetrio.controllers.storage.options import StorageOptions

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "HttpStorageBackend",
    "NodeError",
    "NodeInUse",
    "NodeLocked",
    "NodeNotFound",
    "StorageBackend",
    "StorageError",
    "StorageMetrics",
    "StorageNode",
    "StorageOptions",
    "delete_result",
    "list_storage_nodes",
    "storage_metrics",
]
