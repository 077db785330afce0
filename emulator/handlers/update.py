"""PUT: replace an object or its status (kube's update.go). The body is decoded,
field-validated and authorized for the fields it sets before the current object is read, then
admitted against it, converted to the storage version and stored; the store checks the
resourceVersion precondition."""

from __future__ import annotations

from kubetrio.emulator.handlers.admit import admit
from kubetrio.emulator.handlers.body import body_object, field_warnings
from kubetrio.emulator.handlers.managers import check_options, writer_for
from kubetrio.emulator.handlers.response import object_response
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import shown, to_storage
from kubetrio.emulator.http import Request, Response


async def update_resource(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    ns = t.namespace or ""
    check_options(req, "UpdateOptions")
    obj = body_object(req, t)
    warnings = field_warnings(backend, req, t, obj, "update", req.body)
    backend.access.check_write(t.rt, ns, t.user, obj)
    old = (await shown(backend, t, backend.store.get(t.rt, ns, t.name))).obj
    obj, warnings = await admit(backend, t, old, obj, dry_run, warnings)
    obj = await to_storage(backend, t, obj)
    entry = backend.store.update(
        t.rt, ns, t.name, obj, t.sub, dry_run=dry_run, writer=writer_for(req, t)
    )
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)
