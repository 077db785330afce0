"""DELETE of one object and of a collection (kube's delete.go: ``DeleteResource`` and
``DeleteCollection``). DeleteOptions come from the body (JSON or protobuf) with the query's
``gracePeriodSeconds``, ``propagationPolicy`` and ``orphanDependents`` over them, as kube
merges them; each object a collection delete removes is admitted as its own DELETE, and an
object gone meanwhile is skipped."""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetrio.emulator import crdconvert, errors
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.gc.policy import delete_warning
from kubetrio.emulator.handlers.admit import admit
from kubetrio.emulator.handlers.body import read_body
from kubetrio.emulator.handlers.params import GO_BOOLS, int_param, selectors
from kubetrio.emulator.handlers.response import object_response, status_response
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import raw_for, shown, wanted_version
from kubetrio.emulator.http import JSON, Request, Response
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.emulator.options import DeleteOptions, parse_delete_options

_DELETE_OPTIONS = ("meta.k8s.io/v1", "DeleteOptions")


async def delete_resource(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    if t.sub:
        raise errors.method_not_allowed()
    ns = t.namespace or ""
    old = (await shown(backend, t, backend.store.get(t.rt, ns, t.name))).obj
    _, warnings = await admit(backend, t, old, None, dry_run, [])
    opts = _delete_options(req, t)
    entry, removed = backend.store.delete(
        t.rt,
        ns,
        t.name,
        grace=opts.grace_period,
        preconditions=opts.preconditions,
        dry_run=dry_run or opts.dry_run,
        propagation=opts.propagation,
        orphan_dependents=opts.orphan_dependents,
    )
    warning = delete_warning(t.rt, opts.propagation, opts.orphan_dependents)
    warnings = warnings + ([errors.warning(warning)] if warning else [])
    if removed and not t.rt.returns_deleted:
        return status_response(req, deleted_status(t, entry.obj), 200, warnings)
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)


def deleted_status(t: Target, obj: dict[str, Any]) -> dict[str, Any]:
    """The Success Status a registry answers for an object gone at once: ``kind`` in its
    details holds the resource (plural), as kube fills it."""
    md = obj["metadata"]
    details: dict[str, Any] = {"name": md["name"]}
    if t.rt.group:
        details["group"] = t.rt.group
    details["kind"] = t.rt.plural
    details["uid"] = md.get("uid", "")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


async def delete_collection(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    opts = _delete_options(req, t)
    pred = selectors(req, t)
    result = backend.store.list_entries(t.rt, t.namespace, pred)
    deleted: list[Entry] = []
    for e in result.entries:
        md = e.obj["metadata"]
        # each object is admitted as its own DELETE, as kube-apiserver does
        one = dataclasses.replace(t, namespace=md.get("namespace") or None, name=md["name"])
        await admit(backend, one, (await shown(backend, t, e)).obj, None, dry_run, [])
        try:
            entry, _ = backend.store.delete(
                t.rt,
                md.get("namespace", ""),
                md["name"],
                grace=opts.grace_period,
                dry_run=dry_run or opts.dry_run,
                propagation=opts.propagation,
                orphan_dependents=opts.orphan_dependents,
            )
        except ApiError as exc:
            if exc.code == 404:
                continue
            raise
        deleted.append(entry)
    deleted = await crdconvert.convert_entries(
        backend.store, t.rt, deleted, wanted_version(t), True
    )
    if t.pb:
        meta = {"resourceVersion": str(backend.store.rv)}
        return pb.list_response(t.rt, t.version, meta, [e.obj for e in deleted])
    items = [raw_for(t, e) for e in deleted]
    head = (
        b'{"kind":"'
        + t.rt.kind.encode()
        + b'List","apiVersion":"'
        + t.rt.api_version(t.version).encode()
        + b'","metadata":{"resourceVersion":"'
        + str(backend.store.rv).encode()
        + b'"},"items":['
    )
    return Response(200, [head, b",".join(items), b"]}"], JSON)


def _delete_options(req: Request, t: Target) -> DeleteOptions:
    body: Any = read_body(req, t.rt, _DELETE_OPTIONS) if req.body else {}
    if isinstance(body, dict):
        grace = int_param(req, "gracePeriodSeconds")
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        if "propagationPolicy" in req.query:
            body["propagationPolicy"] = req.query["propagationPolicy"]
        orphan = req.query.get("orphanDependents")
        if orphan is not None:  # Go's strconv.ParseBool spellings
            if orphan not in GO_BOOLS:
                raise errors.bad_request(
                    f'orphanDependents: Invalid value: "{orphan}": must be a boolean'
                )
            body["orphanDependents"] = GO_BOOLS[orphan]
    return parse_delete_options(body)
