"""Owner references as controller-runtime's ``controllerutil`` sets them.

An owner reference makes the garbage collector delete ``obj`` with its owner; the *controller*
reference (at most one per object) also says which controller manages it, which is what
``Builder.owns`` maps events back by. The functions return a changed copy: objects from the
cache are shared and must never be mutated in place.

Example::

    from kubetrio.runtime import set_controller_reference

    config_map = set_controller_reference(greeting, ConfigMap(metadata=ObjectMeta(
        name=greeting.name, namespace=greeting.namespace)))
    await client.create(ConfigMap, config_map)
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

from kubetrio.api.meta import KubeObject, OwnerReference

K = TypeVar("K", bound=KubeObject)


class AlreadyOwnedError(ValueError):
    """``obj`` has a controller already, and it is not the owner being set."""


def set_controller_reference(owner: KubeObject, obj: K) -> K:
    """``obj`` with ``owner`` as its controller (``controller`` and ``blockOwnerDeletion``
    true), replacing an earlier reference to the same owner. Refuses a second controller,
    and an owner the garbage collector could never resolve from ``obj``'s namespace."""
    _check_scope(owner, obj)
    _check_uid(owner)
    ref = new_controller_ref(owner)
    existing = obj.metadata.controller_ref()
    if existing is not None and not _same_owner(existing, ref):
        raise AlreadyOwnedError(
            f"{_describe(obj)} is already owned by another {existing.kind} controller "
            f"{existing.name}"
        )
    return _upsert(obj, ref)


def set_owner_reference(owner: KubeObject, obj: K) -> K:
    """``obj`` with a plain (non-controller) reference to ``owner``, replacing an earlier
    reference to the same owner."""
    _check_scope(owner, obj)
    _check_uid(owner)
    meta = owner.metadata
    ref = OwnerReference(
        api_version=owner.KIND.api_version, kind=owner.KIND.kind, name=meta.name, uid=meta.uid
    )
    return _upsert(obj, ref)


def is_controlled_by(obj: KubeObject, owner: KubeObject) -> bool:
    """``metav1.IsControlledBy``: ``obj``'s controller reference names ``owner``'s uid."""
    ref = obj.metadata.controller_ref()
    return ref is not None and ref.uid == owner.metadata.uid


def new_controller_ref(owner: KubeObject) -> OwnerReference:
    """``metav1.NewControllerRef``: a reference to ``owner`` marked as its controller, for
    objects written whole (a create body, an adoption patch)."""
    return OwnerReference(
        api_version=owner.KIND.api_version,
        kind=owner.KIND.kind,
        name=owner.metadata.name,
        uid=owner.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )


def _check_uid(owner: KubeObject) -> None:
    if not owner.metadata.uid:
        raise ValueError(f"owner {_describe(owner)} has no metadata.uid: use the object as read")


def _check_scope(owner: KubeObject, obj: KubeObject) -> None:
    """Owner references carry no namespace: a namespaced owner must share ``obj``'s."""
    if not owner.KIND.namespaced:
        return
    if not obj.KIND.namespaced:
        raise ValueError(
            "cluster-scoped resource must not have a namespace-scoped owner, "
            f"owner's namespace {owner.metadata.namespace}"
        )
    if owner.metadata.namespace != obj.metadata.namespace:
        raise ValueError(
            "cross-namespace owner references are disallowed, owner's namespace "
            f"{owner.metadata.namespace}, obj's namespace {obj.metadata.namespace}"
        )


def _same_owner(a: OwnerReference, b: OwnerReference) -> bool:
    """Same group, kind and name: the version may differ (controller-runtime's rule)."""
    group = a.api_version.rpartition("/")[0]
    return (group, a.kind, a.name) == (b.api_version.rpartition("/")[0], b.kind, b.name)


def _upsert(obj: K, ref: OwnerReference) -> K:
    refs = list(obj.metadata.owner_references)
    at = next((i for i, r in enumerate(refs) if _same_owner(r, ref)), None)
    if at is None:
        refs.append(ref)
    else:
        refs[at] = ref
    metadata = msgspec.structs.replace(obj.metadata, owner_references=tuple(refs))
    return msgspec.structs.replace(obj, metadata=metadata)


def _describe(obj: KubeObject) -> str:
    meta = obj.metadata
    name = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return f"{obj.KIND.kind} {name}"
