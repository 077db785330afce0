"""Objects the API server holds that do not fit their typed view ("poison objects").

The server validates against the CRD's schema, which may be looser than the typed view (or
absent: ``x-kubernetes-preserve-unknown-fields``), so an object can exist that kubetrio cannot
decode. One such object must not stop a LIST or a watch of its whole kind: it is decoded alone,
and what fails becomes an ``Undecodable`` — its identity (read leniently from the raw JSON, so
the informer can drop it from the cache) and msgspec's message, which names the field path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from kubetrio.runtime.controller.queue import ObjectKey


@dataclass(frozen=True, slots=True)
class Undecodable:
    """One object that failed to decode: who it is and why (msgspec's ``... - at `$.path```)."""

    namespace: str
    name: str
    resource_version: str
    error: str

    @property
    def key(self) -> ObjectKey:
        """The store key the object would have had."""
        return ObjectKey(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name or "<unnamed>"


def undecodable(raw: bytes, error: Exception) -> Undecodable:
    """Identify a raw object that failed to decode; metadata of the wrong shape reads as ''."""
    try:
        document: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        document = None
    metadata = document.get("metadata") if isinstance(document, dict) else None
    if not isinstance(metadata, dict):
        metadata = {}

    def text(field: str) -> str:
        value = metadata.get(field)
        return value if isinstance(value, str) else ""

    return Undecodable(
        text("namespace"), text("name"), text("resourceVersion"), " ".join(str(error).split())
    )
