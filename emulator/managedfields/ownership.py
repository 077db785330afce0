"""Who owns which field: the ``managedFields`` a write leaves, and the conflicts an apply
meets, as kube-apiserver's field manager (structured-merge-diff) decides them.

An update (create, PUT, the non-apply patches) takes the fields it added or changed from
whoever owned them, and every manager loses the fields it removed. An apply owns exactly what
its configuration names; changing a field another manager owns is a conflict unless forced
(then the field changes hands); a field the applier named last time and no longer does is
removed from the object when nobody else owns it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.jsoncopy import json_copy
from kubetrio.emulator.managedfields import entries
from kubetrio.emulator.managedfields.entries import APPLY, UPDATE, Entry, Managed
from kubetrio.emulator.managedfields.fieldset import EMPTY, FieldSet, Path, path_text
from kubetrio.emulator.managedfields.merge import drop_emptied, merge, remove
from kubetrio.emulator.managedfields.schema import Schema
from kubetrio.emulator.managedfields.walk import DuplicateKey, applied_set, diff

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Writer:
    """Who writes, through which version and subresource. ``ignored``: top-level fields this
    endpoint resets whatever the body says (status on the main resource, spec on status), so
    nobody comes to own them by writing there."""

    manager: str
    api_version: str
    subresource: str = ""
    ignored: tuple[str, ...] = ()
    result: list[dict[str, Any]] | None = None  # the entries an apply decided, stored as is

    def ident(self, operation: str) -> tuple[str, str, str, str]:
        version = "" if operation == APPLY else self.api_version
        return (self.manager, operation, self.subresource, version)


def _ignored(writer: Writer, paths: FieldSet) -> FieldSet:
    if not writer.ignored:
        return paths
    skip = {"f:" + f for f in writer.ignored}
    return frozenset(p for p in paths if p[0] not in skip)


def _compare(
    old: dict[str, Any], new: dict[str, Any], schema: Schema, writer: Writer
) -> tuple[FieldSet, FieldSet]:
    """(added or modified, removed) between two objects."""
    changed, removed = diff(old, new, schema)
    return _ignored(writer, frozenset(changed)), _ignored(writer, frozenset(removed))


def _update(
    managed: Managed,
    old: dict[str, Any],
    new: dict[str, Any],
    schema: Schema,
    writer: Writer,
    now: str | None,
) -> None:
    changed, removed = _compare(old, new, schema, writer)
    lost = changed | removed
    for e in managed.values():
        if not e.fields.isdisjoint(lost):
            e.set_fields(e.fields - lost)
    if changed:
        ident = writer.ident(UPDATE)
        prev = managed.get(ident)
        fields = changed | (prev.fields if prev else EMPTY)
        managed[ident] = Entry(
            writer.manager, UPDATE, writer.api_version, writer.subresource, now, fields
        )


def _base(sent: Any, live: dict[str, Any] | None) -> Managed:
    """The entries a write starts from: none when the body resets them (``[]``), what the
    body sends when that is a valid, non-empty list, else the live object's (a client that
    does not know the field must not erase it)."""
    if isinstance(sent, list) and not sent:
        return {}
    managed = entries.decode(sent) if sent is not _MISSING else None
    if not managed and live is not None:
        managed = entries.decode(live.get("metadata", {}).get("managedFields"))
    return managed or {}


def record_update(
    schema: Schema,
    live: dict[str, Any] | None,
    new: dict[str, Any],
    sent: Any,
    writer: Writer,
    now: str | None,
) -> None:
    """Set ``new``'s managedFields for an update by ``writer`` (``live`` None: a create).
    ``sent`` is the managedFields the request body carried (``_MISSING`` if none). An
    existing object nobody tracks (or whose client reset the entries) stays untracked."""
    md = new["metadata"]
    managed = _base(sent, live)
    if not managed and live is not None:
        md.pop("managedFields", None)
        return
    _update(managed, live or {}, new, schema, writer, now)
    _store(md, managed)


def _store(md: dict[str, Any], managed: Managed) -> None:
    entries.cap_updaters(managed)
    encoded = entries.encode(managed)
    if encoded:
        md["managedFields"] = encoded
    else:
        md.pop("managedFields", None)


def apply(
    schema: Schema,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    writer: Writer,
    now: str,
    force: bool,
) -> dict[str, Any]:
    """The object an apply of ``applied`` by ``writer`` makes of ``live`` (None: creating),
    with its managedFields; 409 Conflict naming the other managers' fields it would change."""
    if applied.get("metadata", {}).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    base = live or {}
    managed = entries.decode(base.get("metadata", {}).get("managedFields")) or {}
    if live is not None and not managed:
        first = Writer(
            entries.BEFORE_FIRST_APPLY, writer.api_version, writer.subresource, writer.ignored
        )
        _update(managed, {}, live, schema, first, now)
    try:
        mine = _ignored(writer, applied_set(applied, schema))
    except DuplicateKey as dup:
        raise _bad_configuration(applied, writer, dup) from None
    merged: dict[str, Any] = merge(base, applied, schema)
    ident = writer.ident(APPLY)
    last = managed.get(ident)
    gone = _gone(last.fields - mine, managed, ident, mine) if last is not None else EMPTY
    if gone:
        merged = remove(json_copy(merged), gone, schema)
    changed, removed = _compare(base, merged, schema, writer)
    conflicts = {i: e.fields & changed for i, e in managed.items() if i != ident}
    conflicts = {i: c for i, c in conflicts.items() if c}
    if conflicts and not force:
        raise conflict_error([(managed[i], c) for i, c in conflicts.items()])
    lost = changed | removed
    for i, e in managed.items():
        if i != ident and not e.fields.isdisjoint(lost):
            e.set_fields(e.fields - lost)
    if gone:
        # The emptied maps stay in the comparison (owners keep them) but not in the object.
        merged = drop_emptied(merged, gone, schema)
    # The time moves only when the object changes; a manager that changed nothing is new
    # without one.
    time = now if merged != base else (last.time if last is not None else None)
    managed[ident] = Entry(
        writer.manager, APPLY, writer.api_version, writer.subresource, time, mine
    )
    md = merged.setdefault("metadata", {})
    _store(md, managed)
    return merged


def _gone(
    dropped: FieldSet, managed: Managed, ident: tuple[str, str, str, str], mine: FieldSet
) -> FieldSet:
    """What the applier gave up (``dropped``) that nobody owns, itself or below it."""
    if not dropped:
        return EMPTY
    owned: set[Path] = set(mine)
    for i, e in managed.items():
        if i != ident:
            owned |= e.fields
    prefixes = {p[:n] for p in owned for n in range(1, len(p) + 1)}
    return frozenset(p for p in dropped if p not in prefixes)


def _bad_configuration(
    applied: dict[str, Any], writer: Writer, dup: DuplicateKey
) -> errors.ApiError:
    """The 500 the apiserver answers when an applied configuration cannot be typed: it names
    the configuration as namespace/name as sent, with its group/version/kind."""
    md = applied.get("metadata") or {}
    group, _, version = writer.api_version.rpartition("/")
    where = f"{md.get('namespace') or ''}/{md.get('name') or ''}; {group}/{version}, "
    where += f"Kind={applied.get('kind')}"
    what = f"{path_text(dup.path)}: duplicate entries for key {path_text((dup.element,))}"
    return errors.ApiError(500, "", f"failed to create typed patch object ({where}): {what}")


def _manager_text(e: Entry) -> str:
    text = json.dumps(e.manager, ensure_ascii=False)
    if e.subresource:
        text += f" with subresource {json.dumps(e.subresource)}"
    if e.operation == UPDATE:
        text += f" using {e.api_version}"
    return text


def _path_order(p: Path) -> tuple[tuple[int, str], ...]:
    rank = {"f": 0, "k": 1, "v": 2, "i": 3}
    return tuple((rank.get(el[:1], 4), el[2:]) for el in p)


def _ident_json(e: Entry) -> str:
    out: dict[str, str] = {"manager": e.manager, "operation": e.operation}
    if e.operation == UPDATE and e.api_version:
        out["apiVersion"] = e.api_version
    if e.subresource:
        out["subresource"] = e.subresource
    return json.dumps(out, separators=(",", ":"))


def conflict_error(found: list[tuple[Entry, FieldSet]]) -> errors.ApiError:
    """409 Conflict as the apiserver words it: one line for a single conflict, else the
    paths grouped under each manager (managers sorted)."""
    pairs = sorted(
        ((e, p) for e, paths in found for p in paths),
        key=lambda ep: (_ident_json(ep[0]), _path_order(ep[1])),
    )
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_manager_text(e)}",
            "field": path_text(p),
        }
        for e, p in pairs
    ]
    if len(pairs) == 1:
        e, p = pairs[0]
        message = f"Apply failed with 1 conflict: conflict with {_manager_text(e)}: {path_text(p)}"
    else:
        lines: list[str] = []
        by_manager: dict[str, list[str]] = {}
        texts: dict[str, str] = {}
        for e, p in pairs:
            by_manager.setdefault(e.manager, []).append(path_text(p))
            texts[e.manager] = _manager_text(e)
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {texts[manager]}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return errors.ApiError(409, "Conflict", message, {"causes": causes})


MISSING = _MISSING
