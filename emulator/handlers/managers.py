"""Who a write is recorded for in managedFields: the ``fieldManager`` query parameter, else
the User-Agent's product name; the version written through and the subresource. The fields
an endpoint resets whatever the body says (status through the main resource, spec through
status) are owned by nobody who writes there."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.handlers.scope import Target
from kubetrio.emulator.http import Request
from kubetrio.emulator.managedfields import Writer, manager_name

_TRACKED_SUBRESOURCES = ("status", "scale")


def writer_for(req: Request, t: Target, result: list[dict[str, Any]] | None = None) -> Writer:
    sub = t.sub if t.sub in _TRACKED_SUBRESOURCES else ""
    if sub == "status":
        ignored: tuple[str, ...] = ("spec",)
    elif t.rt.has_status and not sub:
        ignored = ("status",)
    else:
        ignored = ()
    return Writer(
        manager_name(req.query.get("fieldManager", ""), req.header("user-agent")),
        t.rt.api_version(t.version),
        sub,
        ignored,
        result,
    )


def check_options(req: Request, options: str, apply: bool = False) -> None:
    """The write options' fieldManager and force rules (``options``: CreateOptions,
    UpdateOptions or PatchOptions), checked before the body is read, as the apiserver
    validates options: force only with apply, a fieldManager for apply, at most 128 bytes of
    printable characters."""
    causes: list[tuple[str, str, str]] = []
    manager = req.query.get("fieldManager", "")
    if options == "PatchOptions":
        if not apply and "force" in req.query:
            causes.append(
                (
                    "FieldValueForbidden",
                    "force",
                    "Forbidden: may not be specified for non-apply patch",
                )
            )
        elif apply and not manager:
            causes.append(
                (
                    "FieldValueRequired",
                    "fieldManager",
                    "Required value: is required for apply patch",
                )
            )
    if len(manager.encode()) > 128:
        causes.append(
            ("FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes")
        )
    elif not manager.isprintable():
        causes.append(
            (
                "FieldValueInvalid",
                "fieldManager",
                f"Invalid value: {json.dumps(manager)}: must only contain printable characters",
            )
        )
    if causes:
        raise errors.invalid("meta.k8s.io", options, "", causes)
