"""WATCH (kube's watch.go ``serveWatch``): a chunked stream of events, JSON lines, protobuf
frames or Table rows as negotiated, from a resourceVersion or with the initial events first,
with bookmarks and an optional timeout; ``/watch/`` paths and named watches follow one object.
The stream itself is ``kubetrio.emulator.watch``; this module turns the query into its
``WatchSpec``, so every parameter error is a 400 before the stream opens."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.emulator import crdconvert, errors
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.handlers.params import bool_param, int_param, selectors
from kubetrio.emulator.handlers.response import wants_table
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import wanted_version
from kubetrio.emulator.http import Request, StreamResponse
from kubetrio.emulator.kubepb import negotiate as pbneg
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.tables import table
from kubetrio.emulator.watch import Encoder, Watch, WatchSpec


def serve_watch(
    backend: Backend, req: Request, t: Target, cut_after: float | None, expired: bool = False
) -> StreamResponse:
    """The watch stream; ``expired`` opens it to say "too old" in an ERROR event, as
    kube-apiserver does for a resourceVersion it no longer has."""
    pred = selectors(req, t)
    rv = req.query.get("resourceVersion", "")
    if rv not in ("", "0"):
        try:
            if int(rv) < 0:
                raise ValueError
        except ValueError:
            raise errors.bad_request(
                f'resourceVersion: Invalid value: "{rv}": must be a non-negative integer'
            ) from None
    timeout = int_param(req, "timeoutSeconds")
    encode: Encoder | None = None
    proto = t.pb and not wants_table(req)
    if wants_table(req):
        first = [True]
        rt = t.rt

        def table_line(type_: str, entry: Entry) -> bytes:
            if type_ == "BOOKMARK":
                obj: Any = entry.obj
            else:
                obj = table(rt, [entry.obj], entry.rv, headers=first[0])
                first[0] = False
            return msgspec.json.encode({"type": type_, "object": obj}) + b"\n"

        encode = table_line
    elif proto:
        encode = pb.watch_encoder(t.rt, t.version)

    # The options are valid (``reqoptions``): sendInitialEvents came with NotOlderThan.
    initial_events = bool_param(req.query.get("sendInitialEvents"))
    spec = WatchSpec(
        rt=t.rt,
        namespace=t.namespace,
        pred=pred,
        resource_version=rv,
        bookmarks=bool_param(req.query.get("allowWatchBookmarks")),
        bookmark_interval=backend.settings.bookmark_interval,
        timeout=float(timeout) if timeout else None,
        cut_after=cut_after,
        encode=encode,
        initial_events=initial_events,
        encode_error=pb.watch_error if proto else None,
    )
    if crdconvert.converts(backend.store, t.rt):
        store, rt, want = backend.store, t.rt, wanted_version(t)

        async def convert(entries: list[Entry]) -> list[Entry]:
            return await crdconvert.convert_entries(store, rt, entries, want)

        spec.convert = convert
    if t.name:
        name = t.name
        inner = spec.pred

        def by_name(o: dict[str, Any]) -> bool:
            return bool(o["metadata"].get("name") == name and (inner is None or inner(o)))

        spec.pred = by_name
    watch = Watch(backend.store, backend.faults, spec)
    if expired:
        watch.expire()
    if proto:
        return StreamResponse(watch.run, content_type=pbneg.PROTOBUF_WATCH)
    return StreamResponse(watch.run)
