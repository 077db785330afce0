"""Adding and removing a finalizer with one write that cannot drop anyone else's.

The finalizer list is replaced whole by a merge patch, so the patch carries the resourceVersion
the caller read: if another writer changed the object meanwhile (say, added its own finalizer),
the API server answers 409 and the caller's reconcile retries on a fresh read, rather than the
list being overwritten. An object already in the wanted state costs no request.

Example::

    from kubetrio.runtime import ensure_finalizer, remove_finalizer

    async def reconcile(self, key: ObjectKey) -> Result:
        greeting = self.greetings.get(key.namespace, key.name)
        if greeting is None:
            return Result()
        if greeting.deleting:
            await self.cleanup(greeting)
            await remove_finalizer(self.client, greeting, "example.com/cleanup")
            return Result()
        greeting = await ensure_finalizer(self.client, greeting, "example.com/cleanup")
        if greeting is None:
            return Result()  # deleted meanwhile
        ...
"""

from __future__ import annotations

from typing import TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client

K = TypeVar("K", bound=KubeObject)


async def ensure_finalizer(client: Client, obj: K, name: str) -> K | None:
    """``obj`` holding finalizer ``name`` (as written, or ``obj`` itself when it held it
    already); None when the object is gone. A 409 (``obj`` is stale) propagates."""
    if name in obj.metadata.finalizers:
        return obj
    return await _write(client, obj, [*obj.metadata.finalizers, name])


async def remove_finalizer(client: Client, obj: K, name: str) -> K | None:
    """``obj`` without finalizer ``name`` (as written, or ``obj`` itself when it lacked it);
    None when the object is gone, which is what removing the last finalizer of a deleting
    object usually leads to. A 409 (``obj`` is stale) propagates."""
    if name not in obj.metadata.finalizers:
        return obj
    return await _write(client, obj, [f for f in obj.metadata.finalizers if f != name])


async def _write(client: Client, obj: K, finalizers: list[str]) -> K | None:
    meta = obj.metadata
    patch = {
        "metadata": {"resourceVersion": meta.resource_version, "finalizers": finalizers or None}
    }
    try:
        return await client.patch(type(obj), meta.name, patch, namespace=meta.namespace)
    except ApiError as error:
        if error.status != 404:
            raise
        return None
