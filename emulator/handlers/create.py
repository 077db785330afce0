"""POST: create an object in a collection (kube's create.go), and the two subresources a pod
is POSTed to: ``eviction`` (policy/v1 Eviction, PodDisruptionBudgets honoured) and
``binding`` (what a scheduler sends). A create is decoded, field-validated, authorized for
the fields it sets, admitted, converted to the storage version and stored, in that order,
as kube's create handler does."""

from __future__ import annotations

from kubetrio.emulator import errors
from kubetrio.emulator.binding import bind
from kubetrio.emulator.eviction import evict
from kubetrio.emulator.handlers.admit import admit
from kubetrio.emulator.handlers.body import body_object, field_warnings, read_body
from kubetrio.emulator.handlers.managers import check_options, writer_for
from kubetrio.emulator.handlers.response import object_response, status_response
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import shown, to_storage
from kubetrio.emulator.http import Request, Response
from kubetrio.emulator.meta import sub_object

_EVICTION = ("policy/v1", "Eviction")
_BINDING = ("v1", "Binding")


async def create_resource(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    ns = t.namespace or ""
    if t.sub == "eviction":
        pods = t.rt
        pdbs = backend.store.types.lookup("policy", "v1", "poddisruptionbudgets")
        assert pdbs is not None
        status = evict(
            backend.store, pods, pdbs, ns, t.name, read_body(req, t.rt, _EVICTION), dry_run
        )
        return status_response(req, status, 201)
    if t.sub == "binding":
        return _bind(backend, req, t, dry_run)
    if t.name:
        raise errors.method_not_allowed()
    check_options(req, "CreateOptions")
    obj = body_object(req, t)
    warnings = field_warnings(backend, req, t, obj, "create", req.body)
    backend.access.check_write(t.rt, ns, t.user, obj)
    obj, warnings = await admit(backend, t, None, obj, dry_run, warnings)
    obj = await to_storage(backend, t, obj)
    made = backend.store.create(t.rt, ns, obj, dry_run=dry_run, writer=writer_for(req, t))
    entry = await shown(backend, t, made)
    return object_response(req, t, entry, 201, warnings)


def _bind(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    body = read_body(req, t.rt, _BINDING)
    if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
        raise errors.bad_request("the request body must be a Binding")
    node = sub_object(body, "target", "target").get("name")
    if not node or not isinstance(node, str):
        raise errors.invalid(
            "", "Binding", t.name, [("FieldValueRequired", "target.name", "Required value")]
        )
    bind(backend.store, t.rt, t.namespace or "", t.name, node, dry_run)
    return status_response(req, errors.success(201), 201)
