"""Metadata-only views of a kind: what the sharder lists and watches, and what it keeps.

The sharder needs an object's name, namespace, its sharding labels, its controller owner and
its resourceVersion, never its spec or status. ``metadata_view`` holds the whole ``metadata``
and nothing else, so the decoder skips the rest (the admission webhook answers with it: its
patch must leave every other label alone). ``placement_view`` holds less: the sharder caches
one per object, and its memory is what the ring costs per object, so it keeps only what an
assignment reads: every label but the sharding ones, and every owner reference but the
controller's (without its uid), are dropped as it is decoded.
"""

from __future__ import annotations

import functools
from typing import cast

import msgspec

from kubetrio.api.meta import KubeObject, Model, OwnerReference, kind_of
from kubetrio.runtime.sharding.labels import PREFIX

# The label keys a placement keeps: every ring's shard and drain labels.
_SHARDING_KEYS = (f"shard.{PREFIX}/", f"drain.{PREFIX}/")


class Placement(Model, kw_only=True):
    """What the sharder keeps of an object's ``metadata``: where it is and whom it follows.

    Read by the same code as an ``ObjectMeta`` (``name``, ``namespace``, ``labels``,
    ``owner_references``, ``resource_version``, ``controller_ref()``)."""

    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()

    def __post_init__(self) -> None:
        # The informer interns the strings that repeat (namespace, shard ids, owner kinds).
        if self.labels:
            self.labels = {
                key: value for key, value in self.labels.items() if key.startswith(_SHARDING_KEYS)
            }
        ref = self.controller_ref()
        if ref is not None:
            ref.uid = ""
            ref.block_owner_deletion = None
        self.owner_references = () if ref is None else (ref,)

    def controller_ref(self) -> OwnerReference | None:
        """The owner reference marked ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if ref.controller), None)


def _view(kind: type[KubeObject], suffix: str, meta: type[Model] | None) -> type[KubeObject]:
    info = kind_of(kind)
    fields = [] if meta is None else [("metadata", meta, msgspec.field(default_factory=meta))]
    view = msgspec.defstruct(
        f"{info.kind}{suffix}",
        fields,
        bases=(KubeObject,),
        namespace={"KIND": info, "__doc__": f"{info.kind}: {suffix.lower()} only."},
        module=__name__,
        kw_only=True,
    )
    return cast(type[KubeObject], view)


@functools.cache
def metadata_view(kind: type[KubeObject]) -> type[KubeObject]:
    """A ``KubeObject`` subclass addressing ``kind`` on the server and holding only metadata."""
    return _view(kind, "Metadata", None)


@functools.cache
def placement_view(kind: type[KubeObject]) -> type[KubeObject]:
    """A ``KubeObject`` subclass addressing ``kind`` whose ``metadata`` is a ``Placement``."""
    return _view(kind, "Placement", Placement)
