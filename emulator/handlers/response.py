"""Answers as the client negotiated them (kube's ``transformResponseObject``): a Table when
``Accept`` asks ``as=Table``, protobuf when it prefers it for a built-in kind, otherwise the
stored JSON bytes as they are, so the common answer costs no encoding."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.handlers.scope import Target
from kubetrio.emulator.handlers.versions import raw_for
from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.emulator.kubepb import negotiate as pbneg
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.tables import table


def wants_table(req: Request) -> bool:
    return "as=Table" in req.header("accept")


def status_response(
    req: Request, status: dict[str, Any], code: int, headers: list[tuple[str, str]] | None = None
) -> Response:
    """A Status body (error or success), protobuf when the client prefers it."""
    if pbneg.status_protobuf(req.header("accept")):
        return pb.status_response(status, code, headers)
    return json_response(status, code, headers)


def object_response(
    req: Request,
    t: Target,
    entry: Entry,
    code: int,
    warnings: list[tuple[str, str]] | None = None,
) -> Response:
    """One object, as a Table, protobuf or JSON in the requested version."""
    if wants_table(req):
        rv = entry.rv or None
        return json_response(
            table(t.rt, [entry.obj], rv, req.query.get("includeObject", "Metadata")),
            code,
            warnings,
        )
    if t.pb:
        return pb.object_response(t.rt, t.version, entry.obj, code, warnings)
    return Response(code, raw_for(t, entry), headers=warnings or [])
