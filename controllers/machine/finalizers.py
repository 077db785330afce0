"""Adding and removing this controller's finalizer with one conditional write."""

from __future__ import annotations

from typing import TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.controllers.machine.status import FINALIZER
from kubetrio.runtime.client import Client
from kubetrio.runtime.errors import ApiError

K = TypeVar("K", bound=KubeObject)


async def set_finalizer(client: Client, obj: K, present: bool) -> K | None:
    """``obj`` with (or without) the finalizer, as written; None when it is gone already. The
    list is replaced whole, so the write is conditional on the resourceVersion read: another
    finalizer added meanwhile fails it (a conflict to retry), it is never dropped."""
    others = [f for f in obj.metadata.finalizers if f != FINALIZER]
    wanted = [*others, FINALIZER] if present else others
    try:
        return await client.patch(
            type(obj),
            obj.metadata.name,
            {
                "metadata": {
                    "resourceVersion": obj.metadata.resource_version,
                    "finalizers": wanted or None,
                }
            },
            namespace=obj.metadata.namespace,
        )
    except ApiError as error:
        if error.status != 404:
            raise
        return None
