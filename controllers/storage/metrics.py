"""``kubetrio_storage_*``: what the storage-node controllers asked the backend and how it went.

One set per registry (both controllers and the HTTP client share it), every label series
created up front so a dashboard shows zeros rather than gaps before the first delete.
"""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter, Histogram

from kubetrio.controllers.storage.errors import NodeInUse, NodeLocked, NodeNotFound

# How a storage-node delete ended, from either controller.
DELETE_RESULTS = ("deleted", "not_found", "in_use", "locked", "error")
OPS = ("list", "delete")
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30)


class StorageMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.node_deletes = Counter(
            "kubetrio_storage_node_deletes_total",
            "Storage-node deletes asked of the backend (node-delete controller and storage GC), "
            "by outcome",
            ["result"],
            registry=registry,
        )
        self.gc_runs = Counter(
            "kubetrio_storage_gc_runs_total",
            "Storage GC passes run (failed ones included)",
            registry=registry,
        )
        self.gc_deleted = Counter(
            "kubetrio_storage_gc_deleted_total",
            "Storage nodes without a Kubernetes Node that the storage GC deleted",
            registry=registry,
        )
        self.gc_errors = Counter(
            "kubetrio_storage_gc_errors_total",
            "Storage GC failures: a list that failed, or a delete the backend refused",
            registry=registry,
        )
        self.request_duration = Histogram(
            "kubetrio_storage_backend_request_duration_seconds",
            "Storage backend HTTP requests, by operation (failed and timed-out ones included)",
            ["op"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.request_errors = Counter(
            "kubetrio_storage_backend_request_errors_total",
            "Storage backend requests that got no usable answer (unreachable, timed out, "
            "unexpected status or reply), by operation",
            ["op"],
            registry=registry,
        )
        for result in DELETE_RESULTS:
            self.node_deletes.labels(result)
        for op in OPS:
            self.request_duration.labels(op)
            self.request_errors.labels(op)


_providers: weakref.WeakKeyDictionary[CollectorRegistry, StorageMetrics] = (
    weakref.WeakKeyDictionary()
)


def storage_metrics(registry: CollectorRegistry) -> StorageMetrics:
    provider = _providers.get(registry)
    if provider is None:
        provider = _providers[registry] = StorageMetrics(registry)
    return provider


def delete_result(error: Exception | None) -> str:
    """The ``result`` label of a storage-node delete that raised ``error`` (None: it worked)."""
    if error is None:
        return "deleted"
    if isinstance(error, NodeNotFound):
        return "not_found"
    if isinstance(error, NodeInUse):
        return "in_use"
    if isinstance(error, NodeLocked):
        return "locked"
    return "error"
