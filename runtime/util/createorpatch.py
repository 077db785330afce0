"""controller-runtime's ``CreateOrPatch``: make an object match what ``mutate`` says, with the
fewest writes and without dropping fields the typed view does not hold.

``mutate`` edits a private copy in place (of the live object, or of ``obj`` when there is none);
an absent object is created, an existing one merge-patched with the difference only, and an
unchanged one costs no write. The patch is not conditional: like ``CreateOrPatch``, the last
writer of a field wins, and fields nobody touched are kept.

Example::

    from kubetrio.runtime import create_or_patch

    def desired(cm: ConfigMap) -> None:
        cm.data = {**cm.data, "greeting": f"hello, {greeting.spec.name}"}

    result, cm = await create_or_patch(
        client, ConfigMap(metadata=ObjectMeta(name=greeting.name, namespace=greeting.namespace)),
        desired,
    )  # result is "created", "patched" or "unchanged"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import msgspec

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.mergepatch import merge_patch

K = TypeVar("K", bound=KubeObject)
OperationResult = Literal["created", "patched", "unchanged"]
"""What ``create_or_patch`` did, as controller-runtime's ``OperationResult`` says it."""


async def create_or_patch(
    client: Client, obj: K, mutate: Callable[[K], None]
) -> tuple[OperationResult, K]:
    """What was done, and the object as the API server returned (or holds) it."""
    kind = type(obj)
    name, namespace = obj.metadata.name, obj.metadata.namespace
    current = await client.get_or_none(kind, name, namespace=namespace)
    if current is None:
        wanted = _copy(obj)
        mutate(wanted)
        _check_identity(wanted, name, namespace)
        return "created", await client.create(kind, wanted, namespace=namespace)
    wanted = _copy(current)
    mutate(wanted)
    _check_identity(wanted, name, namespace)
    patch = merge_patch(current, wanted)
    if not patch:
        return "unchanged", current
    return "patched", await client.patch(kind, name, patch, namespace=namespace)


def _copy(obj: K) -> K:
    """A deep copy: ``mutate`` may change nested fields, and ``obj`` may be the cache's."""
    return msgspec.convert(msgspec.to_builtins(obj), type(obj))


def _check_identity(obj: KubeObject, name: str, namespace: str) -> None:
    if (obj.metadata.name, obj.metadata.namespace) != (name, namespace):
        raise ValueError("create_or_patch: mutate must not change metadata.name or namespace")
