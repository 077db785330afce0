"""Who a write is recorded for in managedFields: the ``fieldManager`` query parameter, else
the User-Agent's product name; the version written through and the subresource. The fields
an endpoint resets whatever the body says (status through the main resource, spec through
status) are owned by nobody who writes there."""

from __future__ import annotations

from typing import Any

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
