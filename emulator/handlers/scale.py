"""The ``scale`` subresource of custom resources and the apps workloads (kube's ScaleREST):
an autoscaling/v1 Scale read from the object's replica paths, and written back as an update
of the object itself, so watches and RBAC see the write as they see any other."""

from __future__ import annotations

from kubetrio.emulator import scale
from kubetrio.emulator.handlers.body import decode_json
from kubetrio.emulator.handlers.managers import writer_for
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.http import Request, Response, json_response


def serve_scale(backend: Backend, req: Request, t: Target, verb: str, dry_run: bool) -> Response:
    """An object's autoscaling/v1 Scale: read, or written back as an update of the
    object's replicas (the object's own update path, so watches and RBAC see it)."""
    ns = t.namespace or ""
    builtin = t.rt.builtin
    paths = scale.paths_for(builtin, None if builtin else backend.store.crd_of(t.rt))
    current = backend.store.get(t.rt, ns, t.name)
    if verb == "get":
        return json_response(scale.to_scale(paths, current.obj))
    if verb == "update":
        wanted = decode_json(req.body)
    else:
        ctype = req.header("content-type").split(";")[0].strip()
        wanted = scale.patched_scale(
            scale.to_scale(paths, current.obj), ctype, decode_json(req.body), strategic=builtin
        )
    new = scale.apply_scale(paths, t.name, current.clone(), wanted)
    backend.access.check_write(t.rt, ns, t.user, new)
    entry = backend.store.update(
        t.rt, ns, t.name, new, "", dry_run=dry_run, writer=writer_for(req, t)
    )
    return json_response(scale.to_scale(paths, entry.obj))
