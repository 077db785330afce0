"""The ``nodedelete`` controller: when a storage node's Kubernetes Node is deleted, delete the
node in the storage backend too (StorageOS api-manager's ``node-delete``), so the storage
system stops waiting for it to come back.

Flags: ``--csi-driver`` (the annotation key that marks storage nodes, default
``csi.storageos.com``), ``--storage-backend-url``, ``--storage-delete-timeout`` (20 s),
``--node-delete-workers`` (5). The Nodes are the target cluster's (``controllers.clusters``).
"""

from __future__ import annotations

from typing import Any

from kubetrio.api.core import Node
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.nodedelete.predicate import deleted_storage_nodes, is_storage_node
from kubetrio.controllers.nodedelete.reconciler import (
    RETRY_CAP,
    STUCK_AFTER,
    NodeDeleteReconciler,
    retry_limiter,
)
from kubetrio.controllers.storage.backend import StorageBackend
from kubetrio.controllers.storage.client import HttpStorageBackend
from kubetrio.controllers.storage.fenced import fenced_backend
from kubetrio.controllers.storage.metrics import storage_metrics
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.runtime.controller.controller import Controller
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.log import get_logger

NAME = "nodedelete"
COMPONENT = "kubetrio-nodedelete"

log = get_logger("kubetrio.nodedelete")

__all__ = [
    "NAME",
    "RETRY_CAP",
    "STUCK_AFTER",
    "NodeDeleteReconciler",
    "add_node_delete_controller",
    "deleted_storage_nodes",
    "is_storage_node",
    "retry_limiter",
    "setup",
]


def setup(manager: Manager, config: Any) -> None:
    options: StorageOptions = config.storage
    if options.backend_url is None:
        log.warning(
            "no storage backend configured (storage.backendURL, --storage-backend-url): "
            "the nodedelete controller is not started",
            controller=NAME,
        )
        return
    backend = HttpStorageBackend(
        options.backend_url,
        timeout=options.delete_timeout,
        metrics=storage_metrics(manager.registry),
    )
    add_node_delete_controller(manager, backend, options.csi_driver)


def add_node_delete_controller(
    manager: Manager, backend: StorageBackend, csi_driver: str
) -> Controller[ObjectKey]:
    """Register the controller against ``backend`` (any ``StorageBackend``)."""
    target = manager.cluster(TARGET)
    reconciler = NodeDeleteReconciler(
        fenced_backend(manager, backend),
        target.cache.informer(Node).lister,
        storage_metrics(manager.registry),
        recorder=manager.event_recorder(COMPONENT, cluster=TARGET),
    )
    return (
        manager.controller(NAME)
        .for_(Node, deleted_storage_nodes(csi_driver, reconciler.deleted), cluster=target)
        .complete(reconciler)
    )
