"""Schema markers for typed views: what a CRD should say that a Python type cannot.

They are ``msgspec.Meta`` values used in ``Annotated[...]`` and change nothing at runtime; the
CRD generator (``kubetrio crd generate``) reads them::

    from typing import Annotated, Any
    from kubetrio.api.markers import Atomic, DateTime, Int32, PreserveUnknownFields

    class WidgetSpec(Model, kw_only=True):
        replicas: Int32 = 0                       # type: integer, format: int32
        started: DateTime | None = None           # type: string, format: date-time
        selector: Annotated[LabelSelector, Atomic] | None = None
        extra: Annotated[dict[str, Any], PreserveUnknownFields] = {}

``DateTime`` keeps the value a string (as the API server writes it) while the schema still
checks its format; use ``datetime`` itself to have msgspec parse it.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

__all__ = [
    "SCHEMA_OF",
    "Atomic",
    "DateTime",
    "Int32",
    "Int64",
    "IntOrString",
    "PreserveUnknownFields",
    "Quantity",
    "SchemaOf",
]

SCHEMA_OF = "kubetrio.schema_of"  # key in Meta.extra: the Struct whose schema a raw field has

# The server keeps fields the typed view does not model. Typed views are partial on purpose;
# without this the generated CRD would prune what users (or other controllers) write there.
PreserveUnknownFields = msgspec.Meta(
    extra_json_schema={"x-kubernetes-preserve-unknown-fields": True}
)
"""Marks a field whose unmodelled contents the API server keeps
(``x-kubernetes-preserve-unknown-fields``)."""
# A map or struct replaced as a whole by server-side apply (``x-kubernetes-map-type: atomic``).
Atomic = msgspec.Meta(extra_json_schema={"x-kubernetes-map-type": "atomic"})

DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
Int32 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int32"})]
Int64 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int64"})]
IntOrString = int | str

# resource.Quantity's syntax, as apimachinery validates it ("500m", "2Gi", "1e3").
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
Quantity = Annotated[int | str, msgspec.Meta(extra_json_schema={"pattern": QUANTITY_PATTERN})]


def SchemaOf(struct: type, *, required: tuple[str, ...] = ()) -> Any:
    """A raw field (``dict[str, Any]``) kept raw in Python but described in the CRD by
    ``struct``'s schema — for a part read leniently so one bad object is reported rather than
    hiding its whole kind from the cache. ``required`` are wire names the server insists on."""
    extra_schema = {"required": list(required)} if required else None
    return msgspec.Meta(extra={SCHEMA_OF: struct}, extra_json_schema=extra_schema)
