"""``metadata.managedFields`` both ways: the entries as the apiserver writes them (sorted, one
per manager identity, none with an empty set) and as a client may send them, plus the
manager's name when the request names none.

A manager's identity is (manager, operation, subresource) and, for updates, the apiVersion
written through: an applier stays one manager whichever version it applies, an updater is
one per version, as the apiserver keys them.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.managedfields import fieldset
from kubetrio.emulator.managedfields.fieldset import FieldSet

APPLY = "Apply"
UPDATE = "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
MAX_UPDATERS = 10  # update managers kept before the oldest fold into one
ANCIENT = "ancient-changes"


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet
    raw: dict[str, Any] | None = None  # the fieldsV1 it was read from, while still true

    def set_fields(self, fields: FieldSet) -> None:
        self.fields = fields
        self.raw = None

    @property
    def ident(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, self.subresource, version)


Managed = dict[tuple[str, str, str, str], Entry]


def manager_name(field_manager: str, user_agent: str) -> str:
    """The fieldManager query parameter, else the User-Agent up to its first "/" (printable
    characters only, at most 128), as kube-apiserver names an anonymous writer."""
    if field_manager:
        return field_manager
    out = []
    for ch in user_agent.split("/")[0]:
        if unicodedata.category(ch)[0] in "CZ" and ch != " ":
            continue
        out.append(ch)
        if len(out) >= 128:
            break
    return "".join(out)


def decode(raw: Any) -> Managed | None:
    """The entries a stored or sent ``managedFields`` holds; None when it is not a valid
    list of entries (the apiserver then keeps what the live object has)."""
    if not isinstance(raw, list):
        return None
    out: Managed = {}
    for item in raw:
        if not isinstance(item, dict):
            return None
        op = item.get("operation")
        if op not in (APPLY, UPDATE) or item.get("fieldsType", "FieldsV1") != "FieldsV1":
            return None
        try:
            fields = fieldset.decode(item.get("fieldsV1") or {})
        except fieldset.BadFieldSet:
            return None
        time = item.get("time")
        entry = Entry(
            str(item.get("manager") or ""),
            op,
            str(item.get("apiVersion") or ""),
            str(item.get("subresource") or ""),
            time if isinstance(time, str) else None,
            fields,
            item.get("fieldsV1"),
        )
        if entry.ident in out:
            return None
        out[entry.ident] = entry
    return out


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The entries in the apiserver's order: appliers first, then oldest first."""
    entries = [e for e in managed.values() if e.fields]
    entries.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    out: list[dict[str, Any]] = []
    for e in entries:
        item: dict[str, Any] = {"manager": e.manager, "operation": e.operation}
        item["apiVersion"] = e.api_version
        if e.time is not None:
            item["time"] = e.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = e.raw if e.raw is not None else fieldset.encode(e.fields)
        if e.subresource:
            item["subresource"] = e.subresource
        out.append(item)
    return out


def cap_updaters(managed: Managed) -> None:
    """At most MAX_UPDATERS update managers (the bucket included): the oldest fold into
    "ancient-changes", which keeps the time of the last one it took."""
    while True:
        updaters = sorted(
            (e for e in managed.values() if e.operation == UPDATE),
            key=lambda e: (e.manager != ANCIENT, e.time or ""),
        )
        if len(updaters) <= MAX_UPDATERS:
            return
        oldest = next(e for e in updaters if e.manager != ANCIENT)
        del managed[oldest.ident]
        ancient = next((e for e in updaters if e.manager == ANCIENT), None)
        if ancient is None:
            fresh = Entry(ANCIENT, UPDATE, oldest.api_version, "", oldest.time, oldest.fields)
            managed[fresh.ident] = fresh
        else:
            ancient.set_fields(ancient.fields | oldest.fields)
            ancient.time = oldest.time  # the bucket is as recent as what it last took
