"""Object metadata and the base every typed kind shares.

Typed views hold only the fields kubetrio reads; unknown fields are ignored on decode, which is
what keeps the cache small. Because a view is partial it is never sent back with PUT, which would
erase every field it does not hold: writes are patches or round-trip the raw object.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from kubetrio.api.registry import KindInfo


class Model(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, gc=False):
    """Base of all wire types: camelCase names, defaults left off the wire, no GC tracking.

    ``gc=False`` is safe because decoded API objects are trees: nothing in them refers back.
    """


class OwnerReference(Model, kw_only=True):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Model, kw_only=True):
    """The ``metadata`` every object has: name, namespace, labels, annotations, owner
    references, finalizers and the server's bookkeeping (uid, resourceVersion, generation,
    timestamps)."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()

    def controller_ref(self) -> OwnerReference | None:
        """The owner reference marked ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if ref.controller), None)


class ListMeta(Model, kw_only=True):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class UndeclaredKind(TypeError):
    """A Struct used as an API kind without a ``KIND`` (no ``@resource`` on it)."""


class _Undeclared:
    """``KIND`` of a class nobody declared: reading it says how to declare it, so the client,
    the cache and the builder all fail with the same one-line fix instead of an AttributeError."""

    def __get__(self, obj: object, owner: type) -> KindInfo:
        raise UndeclaredKind(undeclared_message(owner))


def undeclared_message(cls: Any) -> str:
    name = getattr(cls, "__qualname__", repr(cls))
    return (
        f"{name} is not a declared kind: decorate it with "
        f"@kubetrio.api.resource(group=..., version=...)"
    )


def kind_of(cls: Any) -> KindInfo:
    """The ``KindInfo`` of a typed kind, or ``UndeclaredKind`` naming the fix (also for a plain
    Struct that is no ``KubeObject`` at all)."""
    info = getattr(cls, "KIND", None)
    if not isinstance(info, KindInfo):
        raise UndeclaredKind(undeclared_message(cls))
    return info


class KubeObject(Model, kw_only=True):
    """A typed API object. Subclasses are declared with ``@kubetrio.api.resource`` (which sets
    ``KIND``) so client and informers can address them."""

    KIND: ClassVar[KindInfo] = _Undeclared()  # type: ignore[assignment]
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def resource_version(self) -> str:
        return self.metadata.resource_version

    @property
    def deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None


T = TypeVar("T", bound=KubeObject)


class ObjectList(Model, Generic[T], kw_only=True):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] = []


class StatusCause(Model, kw_only=True):
    reason: str = ""
    message: str = ""
    field: str = ""


class StatusDetails(Model, kw_only=True):
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: tuple[StatusCause, ...] = ()
    retry_after_seconds: int | None = None


class Status(Model, kw_only=True):
    """``metav1.Status``: how the API server reports errors (and some successes)."""

    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0
    details: StatusDetails | None = None


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API server writes it, or None."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, the API server's ``metav1.Time`` format."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
