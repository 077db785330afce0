"""GET of one object and LIST of a collection (kube's get.go: ``GetResource`` and
``ListResource``). A list pages, selects and may be asked for an exact resourceVersion; an
unfiltered JSON list of a resource that has not changed since is answered from the joined item
bodies kept in the backend's list cache, as the apiserver's watch cache answers it, and the
answer is assembled from the stored bytes rather than re-encoded."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import trio

from kubetrio.emulator import crdconvert, errors
from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.handlers.params import int_param, selectors
from kubetrio.emulator.handlers.response import object_response, wants_table
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import raw_for, shown, wanted_version
from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.emulator.kinds import OBJECT_VIEWS, ResourceType
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.store import Store
from kubetrio.emulator.tables import table
from kubetrio.runtime.util.inflight import waiting_on_simulated_time

_LIST_CACHE_SIZE = 64
FRESHNESS_WAIT = 3.0  # seconds the watch cache waits for a resourceVersion it has not seen


async def get_resource(backend: Backend, req: Request, t: Target) -> Response:
    if t.sub and t.sub not in OBJECT_VIEWS:
        raise errors.method_not_allowed()
    entry = await shown(backend, t, backend.store.get(t.rt, t.namespace or "", t.name))
    return object_response(req, t, entry, 200)


async def list_resource(backend: Backend, req: Request, t: Target) -> Response:
    pred = selectors(req, t)
    limit = int_param(req, "limit") or 0
    cont = req.query.get("continue", "")
    table_wanted = wants_table(req)
    exact = _exact_rv(req)
    rv_asked = req.query.get("resourceVersion", "")
    if rv_asked == "0" and exact is None:
        # The watch cache serves "any version" whole: it does not page.
        limit = 0
    elif rv_asked:
        await fresh_enough(backend.store, int(rv_asked))
    joined: bytes | None = None
    cache_key = (t.rt.key, t.namespace, t.version)
    converting = crdconvert.converts(backend.store, t.rt)
    plain = (
        not converting
        and pred is None
        and not limit
        and not cont
        and not table_wanted
        and exact is None
        and not t.pb
    )
    # Moves with every write to this resource and with every change of its CRD (which may
    # re-default stored objects without a write).
    crd = None if t.rt.builtin else backend.store.crd_of(t.rt)
    stamp = (backend.store.log_for(t.rt).end, crd and crd["metadata"].get("resourceVersion"))
    if plain:
        hit = backend.list_cache.get(cache_key)
        if hit is not None and hit[0] == stamp:
            joined = hit[1]
    rv = backend.store.rv
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if joined is None:
        result = backend.store.list_entries(t.rt, t.namespace, pred, limit, cont, exact)
        if converting:  # one ConversionReview for the page, as kube batches a list
            entries = await crdconvert.convert_entries(
                backend.store, t.rt, result.entries, wanted_version(t), True
            )
            result = dataclasses.replace(result, entries=entries)
        if table_wanted:
            return json_response(
                table(
                    t.rt,
                    [e.obj for e in result.entries],
                    result.rv,
                    req.query.get("includeObject", "Metadata"),
                    continue_token=result.continue_token,
                )
            )
        meta["resourceVersion"] = str(result.rv)
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        if t.pb:
            return pb.list_response(t.rt, t.version, meta, [e.obj for e in result.entries])
        if len(t.rt.versions) == 1:
            joined = b",".join([e.raw for e in result.entries])
        else:
            joined = b",".join([raw_for(t, e) for e in result.entries])
        if plain:
            if len(backend.list_cache) >= _LIST_CACHE_SIZE:
                backend.list_cache.clear()
            backend.list_cache[cache_key] = (stamp, joined)
    head = (
        b'{"kind":"'
        + t.rt.kind.encode()
        + b'List","apiVersion":"'
        + t.rt.api_version(t.version).encode()
        + b'","metadata":'
        + msgspec.json.encode(meta)
        + b',"items":['
    )
    return Response(200, [head, joined, b"]}"])


def _exact_rv(req: Request) -> int | None:
    """The resourceVersion a list is served exactly at (the options are valid: see
    ``reqoptions``); None for the newest state."""
    match = req.query.get("resourceVersionMatch", "")
    rv = req.query.get("resourceVersion", "")
    if not match:
        # kube-apiserver's legacy rule: a paged list at a resourceVersion other than "0"
        # (with no resourceVersionMatch) is served exactly at it, from etcd.
        if rv in ("", "0") or not int_param(req, "limit") or req.query.get("continue"):
            return None
        match = "Exact"
    return int(rv) if match == "Exact" else None


async def fresh_enough(store: Store, rv: int) -> None:
    """Wait (on the emulator's clock) until the store reaches ``rv``, as the watch cache waits
    to catch up with a newer resourceVersion; 504 Too large resource version after
    ``FRESHNESS_WAIT`` seconds, as kube answers."""
    if rv <= store.rv:
        return
    reached = trio.Event()

    def check(_rt: ResourceType, _ev: WatchEvent) -> None:
        if store.rv >= rv:
            reached.set()

    unsubscribe = store.subscribe(check)
    try:
        with trio.move_on_after(FRESHNESS_WAIT), waiting_on_simulated_time():
            await reached.wait()
    finally:
        unsubscribe()
    if not reached.is_set():
        raise errors.ApiError(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {rv}, current: {store.rv}",
            {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
        )
