"""Which deleted Nodes were storage nodes: StorageOS's rule, the CSI node-id annotation.

The CSI node-driver-registrar records every driver's id for a node in the annotation
``csi.volume.kubernetes.io/nodeid`` as a JSON object ``{driver: id}``. A Node whose object has
the configured driver's key there ran the storage system, so its deletion concerns the backend;
any other Node's does not. A malformed annotation is a warning naming the node, then ignored
(never an exception: predicates run inside the informer's event delivery).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kubetrio.api.core import Node
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.util.log import get_logger

NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"

log = get_logger("kubetrio.nodedelete")


def is_storage_node(node: Node, driver: str) -> bool:
    raw = node.metadata.annotations.get(NODE_ID_ANNOTATION)
    if raw is None:
        return False
    try:
        ids = json.loads(raw)
    except (ValueError, RecursionError) as error:  # deep nesting raises the latter
        log.warning(
            "malformed CSI node-id annotation, node ignored",
            node=node.metadata.name,
            annotation=NODE_ID_ANNOTATION,
            error=str(error),
        )
        return False
    if not isinstance(ids, dict):
        log.warning(
            "malformed CSI node-id annotation, node ignored",
            node=node.metadata.name,
            annotation=NODE_ID_ANNOTATION,
            error=f"expected a JSON object, got {type(ids).__name__}",
        )
        return False
    return driver in ids


def _never(*_: object) -> bool:
    return False


def deleted_storage_nodes(driver: str, on_match: Callable[[Node], None] | None = None) -> Predicate:
    """Delete events of storage nodes only (create and update never pass: existing nodes are
    none of this controller's business). ``on_match`` sees each matching Node's last known
    state (tombstones unwrapped), so failures can still be reported on it."""

    def deleted(node: Node) -> bool:
        if not is_storage_node(node, driver):
            return False
        if on_match is not None:
            on_match(node)
        return True

    return Predicate(create=_never, update=_never, delete=deleted)
