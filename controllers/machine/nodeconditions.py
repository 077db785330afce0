"""One condition written on a Node's status by the machine controller (``Terminating``,
``InPlaceUpdate``, ``Preserved``), as MCM writes its own: a strategic merge of the status's
``conditions``, so the kubelet's and everyone else's stay as they are. A Node that is gone has
nothing to mark: that is None, not an error."""

from __future__ import annotations

from typing import Any

from kubetrio.api.core import Node
from kubetrio.api.meta import format_time
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.clock import now


async def set_node_condition(
    client: Client,
    node: str,
    condition_type: str,
    *,
    status: str,
    reason: str,
    message: str,
    heartbeat: bool = False,
) -> Node | None:
    """The condition on ``node`` (its transition time now; its heartbeat too with
    ``heartbeat``); the Node as written, None when it is gone."""
    stamp = format_time(now())
    condition: dict[str, Any] = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": stamp,
    }
    if heartbeat:
        condition["lastHeartbeatTime"] = stamp
    try:
        return await client.patch(
            Node,
            node,
            {"status": {"conditions": [condition]}},
            patch_type="strategic",
            subresource="status",
        )
    except ApiError as error:
        if error.status != 404:
            raise
        return None
