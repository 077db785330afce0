"""Objects in the version a request names. Objects are stored once, in the storage version; a
CRD that serves several versions has them converted on the way out (and a write in another
version on the way in) by its conversion webhook (``crdconvert``), or, with none, renamed."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.emulator import crdconvert
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.handlers.scope import Backend, Target


def wanted_version(t: Target) -> str:
    return t.rt.api_version(t.version)


async def shown(backend: Backend, t: Target, entry: Entry) -> Entry:
    """The stored object in the requested version (its CRD's conversion webhook called
    when it has one; see ``crdconvert``)."""
    converted = await crdconvert.convert_entries(
        backend.store, t.rt, [entry], wanted_version(t), True
    )
    return converted[0]


async def to_storage(backend: Backend, t: Target, obj: Any) -> Any:
    """A write in a version other than the storage version, converted by the CRD's
    conversion webhook (kept as written when the CRD has none)."""
    if not crdconvert.converts(backend.store, t.rt) or not isinstance(obj, dict):
        return obj
    storage = t.rt.api_version(t.rt.storage_version)
    return (await crdconvert.convert(backend.store, t.rt, [obj], storage, True))[0]


def raw_for(t: Target, entry: Entry) -> bytes:
    """The object as the requested version names it (stored once, converted on the way
    out only when a CRD serves several versions)."""
    want = t.rt.api_version(t.version)
    if entry.obj.get("apiVersion") in (want, None):
        return entry.raw
    obj = dict(entry.obj)
    obj["apiVersion"] = want
    return msgspec.json.encode(obj)
