"""The ``storagegc`` controller: a periodic pass deleting storage-backend nodes that have no
Kubernetes Node any more (deletions missed while the manager was down). See ``gc``.

Flags: ``--node-delete-gc-delay`` (30 s; 0 means 10 s), ``--node-delete-gc-interval``
(1 h; 0 disables it), ``--storage-backend-url``, ``--storage-delete-timeout``. The Nodes are
the target cluster's (``controllers.clusters``).
"""

from __future__ import annotations

from typing import Any

from kubetrio.api.core import Node
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.storage.backend import StorageBackend
from kubetrio.controllers.storage.client import HttpStorageBackend
from kubetrio.controllers.storage.fenced import fenced_backend
from kubetrio.controllers.storage.metrics import storage_metrics
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.controllers.storagegc.gc import ZERO_DELAY_SECONDS, StorageGC
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.log import get_logger

NAME = "storagegc"

log = get_logger("kubetrio.storagegc")

__all__ = ["NAME", "ZERO_DELAY_SECONDS", "StorageGC", "add_storage_gc", "setup"]


def setup(manager: Manager, config: Any) -> None:
    options: StorageOptions = config.storage
    if options.backend_url is None:
        log.warning(
            "no storage backend configured (storage.backendURL, --storage-backend-url): "
            "the storage GC is not started",
            controller=NAME,
        )
        return
    backend = HttpStorageBackend(
        options.backend_url,
        timeout=options.delete_timeout,
        metrics=storage_metrics(manager.registry),
    )
    # Plain seconds, as the GC logs its schedule.
    delay, interval = float(options.gc_delay), float(options.gc_interval)
    add_storage_gc(manager, backend, delay=delay, interval=interval)


def add_storage_gc(
    manager: Manager, backend: StorageBackend, *, delay: float, interval: float
) -> StorageGC:
    """Register the GC against ``backend`` (any ``StorageBackend``)."""
    gc = StorageGC(
        fenced_backend(manager, backend),
        manager.cluster(TARGET).cache.informer(Node),
        storage_metrics(manager.registry),
        delay=delay,
        interval=interval,
    )
    manager.add(gc)
    return gc
