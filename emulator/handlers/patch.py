"""PATCH (kube's patch.go): JSON merge, JSON (RFC 6902) and, for built-in kinds, strategic
merge patches applied to the object in the requested version, which is then checked, admitted
and stored as an update is; and server-side apply (``application/apply-patch+yaml``), which
creates a missing object. The patch type is chosen by Content-Type, as kube chooses its
patcher."""

from __future__ import annotations

import yaml

from kubetrio.emulator import errors, managedfields
from kubetrio.emulator.fieldvalidation import duplicate_fields
from kubetrio.emulator.handlers.admit import admit
from kubetrio.emulator.handlers.body import decode_json, field_warnings
from kubetrio.emulator.handlers.managers import check_options, writer_for
from kubetrio.emulator.handlers.response import object_response
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import shown, to_storage
from kubetrio.emulator.http import Request, Response
from kubetrio.emulator.managedfields import schema_for
from kubetrio.emulator.meta import check_type_meta
from kubetrio.emulator.patch import json_patch, merge_patch, strategic_merge

_PATCH_TYPES = frozenset(
    {
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
    }
)


async def patch_resource(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    ctype = req.header("content-type").split(";")[0].strip()
    ns = t.namespace or ""
    check_options(req, "PatchOptions", apply=ctype == "application/apply-patch+yaml")
    if ctype == "application/apply-patch+yaml":
        return await _apply(backend, req, t, dry_run)
    if ctype not in _PATCH_TYPES:
        # Refused by the route before any handler runs: the HTTP router's own words.
        raise errors.ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
    if ctype == "application/strategic-merge-patch+json" and not t.rt.builtin:
        raise errors.unsupported_media_type(ctype)
    current = await shown(backend, t, backend.store.get(t.rt, ns, t.name))
    patch_body = decode_json(req.body)
    # Repeated keys are a property of the body alone: decided here, against the decoded
    # patch before patching shares its subtrees, the common clean body skips the re-parse.
    dup_body: bytes | None = req.body if duplicate_fields(req.body, patch_body) else None
    base = current.clone()
    if ctype == "application/merge-patch+json":
        if not isinstance(patch_body, dict):
            raise errors.bad_request("a JSON merge patch must be a JSON object")
        new = merge_patch(base, patch_body)
    elif ctype == "application/json-patch+json":
        new = json_patch(base, patch_body)
    elif ctype == "application/strategic-merge-patch+json":
        if not t.rt.builtin:
            raise errors.unsupported_media_type(ctype)
        if not isinstance(patch_body, dict):
            raise errors.bad_request("a strategic merge patch must be a JSON object")
        new = strategic_merge(base, patch_body)
    else:
        raise errors.unsupported_media_type(ctype)
    if not isinstance(new, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
    check_type_meta(new, api_versions, t.rt.kind)
    md = new.get("metadata")
    if not isinstance(md, dict):
        raise errors.bad_request("metadata: the patch removed the object's metadata")
    if md.get("name") != t.name:
        raise errors.bad_request(
            f"the name of the object ({md.get('name')}) does not match the name on the URL "
            f"({t.name})"
        )
    warnings = field_warnings(backend, req, t, new, "patch", dup_body)
    backend.access.check_write(t.rt, ns, t.user, new)
    new, warnings = await admit(backend, t, current.obj, new, dry_run, warnings)
    new = await to_storage(backend, t, new)
    entry = backend.store.update(
        t.rt, ns, t.name, new, t.sub, dry_run=dry_run, writer=writer_for(req, t)
    )
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)


async def _apply(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    """Server-side apply: the configuration is merged into the live object (or creates it)
    by the managedfields rules, which decide ownership, conflicts and removals; the result
    is then admitted and stored as any update is, with the managedFields apply decided."""
    try:
        applied = yaml.safe_load(req.body)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(applied, dict):
        raise errors.bad_request("the applied configuration must be an object")
    _check_applied_type(applied, t)
    api_versions = tuple(t.rt.api_version(v) for v in t.rt.versions)
    applied = check_type_meta(applied, api_versions, t.rt.kind)
    md = applied.get("metadata")
    if not isinstance(md, dict) or md.get("name") != t.name:
        raise errors.bad_request(
            f"the name of the object ({(md or {}).get('name')}) does not match the name on "
            f"the URL ({t.name})"
        )
    ns = t.namespace or ""
    warnings = field_warnings(backend, req, t, applied, "apply", None)
    current = backend.store.find(t.rt, ns, t.name)
    if current is not None:
        current = await shown(backend, t, current)
    if current is None and t.sub:
        raise errors.not_found(t.rt.group, t.rt.plural, t.name)
    writer = writer_for(req, t)
    schema = schema_for(t.rt, backend.store.crd_of(t.rt), t.version)
    force = req.query.get("force") == "true"
    now = backend.store.clock.wall_rfc3339()
    live = current.obj if current is not None else None
    new = managedfields.apply(schema, live, applied, writer, now, force)
    decided = writer_for(req, t, new.get("metadata", {}).get("managedFields") or [])
    if current is None:
        # A patch that creates is a create too: the apiserver asks for both verbs.
        backend.access.require(t.user, "create", t.rt, ns, t.name)
        backend.access.check_write(t.rt, ns, t.user, new)
        new, warnings = await admit(backend, t, None, new, dry_run, warnings)
        new = await to_storage(backend, t, new)
        entry = backend.store.create(t.rt, ns, new, dry_run=dry_run, writer=decided)
        return object_response(req, t, await shown(backend, t, entry), 201, warnings)
    backend.access.check_write(t.rt, ns, t.user, new)
    new, warnings = await admit(backend, t, current.obj, new, dry_run, warnings)
    new = await to_storage(backend, t, new)
    entry = backend.store.update(t.rt, ns, t.name, new, t.sub, dry_run=dry_run, writer=decided)
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)


def _check_applied_type(applied: dict[str, object], t: Target) -> None:
    """An applied configuration names its apiVersion and kind, one the endpoint serves; the
    apiserver refuses any other before reading further, printing the group/version/kind as
    Go does (``/v1, Kind=ConfigMap`` for the core group)."""
    api_version, kind = applied.get("apiVersion"), applied.get("kind")
    served = tuple(t.rt.api_version(v) for v in t.rt.versions)
    if api_version in served and kind == t.rt.kind:
        return
    text = api_version if isinstance(api_version, str) else ""
    group, _, version = text.rpartition("/")
    kind_text = kind if isinstance(kind, str) else ""
    raise errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind_text}")
