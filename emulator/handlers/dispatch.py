"""A resource request handed to its verb's handler: counted, delayed or failed as the injected
faults say (a 410 on a watch is said inside the stream, as kube-apiserver says "too old"),
``dryRun`` checked, and the ``scale`` subresource and writes to subresources that take none
routed. The order is the apiserver's: nothing a handler does happens for a request a fault or
a bad parameter refuses."""

from __future__ import annotations

from typing import Any

import trio

from kubetrio.emulator import errors
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.faults import Decision, reason_for
from kubetrio.emulator.handlers import reqoptions
from kubetrio.emulator.handlers.create import create_resource
from kubetrio.emulator.handlers.delete import delete_collection, delete_resource
from kubetrio.emulator.handlers.get import get_resource, list_resource
from kubetrio.emulator.handlers.patch import patch_resource
from kubetrio.emulator.handlers.requestinfo import verb_of
from kubetrio.emulator.handlers.scale import serve_scale
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.update import update_resource
from kubetrio.emulator.handlers.watch import serve_watch
from kubetrio.emulator.http import Request, Response, StreamResponse
from kubetrio.emulator.kinds import OBJECT_VIEWS
from kubetrio.emulator.kubepb import rest as pb
from kubetrio.runtime.util.inflight import waiting_on_simulated_time


async def serve_resource(backend: Backend, req: Request, t: Target) -> Response | StreamResponse:
    verb = verb_of(req, t)
    backend.counters.inc(verb, t.rt.plural, t.sub)
    t.pb = pb.wants_protobuf(req.header("accept"), t.rt)
    decision = await inject_fault(backend, verb, t)
    rule = decision.rule
    if rule is not None and rule.status == 410 and verb == "watch":
        # kube-apiserver opens the stream and says "too old" in it: an ERROR event.
        return serve_watch(backend, req, t, decision.cut_watch_after, expired=True)
    dry_run = req.query.get("dryRun") == "All"
    reqoptions.check_write(req, verb)
    if verb == "watch":
        reqoptions.check_list(req, watch=True)
        return serve_watch(backend, req, t, decision.cut_watch_after)
    if verb == "list":
        reqoptions.check_list(req, watch=False)
        return await list_resource(backend, req, t)
    if t.sub == "scale" and verb in ("get", "update", "patch"):
        return serve_scale(backend, req, t, verb, dry_run)
    if verb == "get":
        return await get_resource(backend, req, t)
    if verb == "create":
        return await create_resource(backend, req, t, dry_run)
    if verb == "update":
        _check_writable_sub(t, ("finalize",))
        return await update_resource(backend, req, t, dry_run)
    if verb == "patch":
        _check_writable_sub(t)
        return await patch_resource(backend, req, t, dry_run)
    if verb == "delete":
        return await delete_resource(backend, req, t, dry_run)
    if verb == "deletecollection":
        return await delete_collection(backend, req, t, dry_run)
    raise errors.method_not_allowed()


async def inject_fault(backend: Backend, verb: str, t: Target) -> Decision:
    """The injected fault for this request: its latency waited, its error raised (but a
    410 on a watch, which the watch itself reports)."""
    decision = backend.faults.decide(verb, t.rt.plural, t.sub, t.namespace or "", t.name)
    if decision.latency > 0:
        with waiting_on_simulated_time():
            await trio.sleep(decision.latency)
    rule = decision.rule
    if rule is None or rule.status is None or (rule.status == 410 and verb == "watch"):
        return decision
    headers = [("Retry-After", str(rule.retry_after))] if rule.retry_after is not None else []
    details: dict[str, Any] = {}
    if rule.retry_after is not None:
        details["retryAfterSeconds"] = rule.retry_after
    raise ApiError(
        rule.status,
        rule.reason or reason_for(rule.status),
        rule.message or f"injected fault: {verb} {t.rt.plural}",
        details,
        headers,
    )


def _check_writable_sub(t: Target, also: tuple[str, ...] = ()) -> None:
    """Update and patch take a named object or a view of it (its status, a pod's ephemeral
    containers or resources; update also a Namespace's finalize); other subresources refuse
    them."""
    if not t.name or (t.sub and t.sub not in OBJECT_VIEWS + also):
        raise errors.method_not_allowed()
