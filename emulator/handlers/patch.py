"""PATCH (kube's patch.go): JSON merge, JSON (RFC 6902) and, for built-in kinds, strategic
merge patches applied to the object in the requested version, which is then checked, admitted
and stored as an update is; and server-side apply (``application/apply-patch+yaml``), which
creates a missing object. The patch type is chosen by Content-Type, as kube chooses its
patcher."""

from __future__ import annotations

import yaml

from kubetrio.emulator import errors
from kubetrio.emulator.fieldvalidation import duplicate_fields
from kubetrio.emulator.handlers.admit import admit
from kubetrio.emulator.handlers.body import decode_json, field_warnings
from kubetrio.emulator.handlers.response import object_response
from kubetrio.emulator.handlers.scope import Backend, Target
from kubetrio.emulator.handlers.versions import shown, to_storage
from kubetrio.emulator.http import Request, Response
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
    entry = backend.store.update(t.rt, ns, t.name, new, t.sub, dry_run=dry_run)
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)


async def _apply(backend: Backend, req: Request, t: Target, dry_run: bool) -> Response:
    """Server-side apply, approximated: create when missing, otherwise merge the applied
    configuration in (strategic for built-ins). Field ownership is not tracked, so fields
    dropped from a later apply are kept rather than removed."""
    if not req.query.get("fieldManager"):
        raise errors.bad_request(
            "PATCH, fieldManager is required for apply requests (application/apply-patch+yaml)"
        )
    try:
        applied = yaml.safe_load(req.body)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None
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
    if current is None:
        if t.sub:
            raise errors.not_found(t.rt.group, t.rt.plural, t.name)
        # A patch that creates is a create too: the apiserver asks for both verbs.
        backend.access.require(t.user, "create", t.rt, ns, t.name)
        backend.access.check_write(t.rt, ns, t.user, applied)
        applied, warnings = await admit(backend, t, None, applied, dry_run, warnings)
        applied = await to_storage(backend, t, applied)
        entry = backend.store.create(t.rt, ns, applied, dry_run=dry_run)
        return object_response(req, t, await shown(backend, t, entry), 201, warnings)
    merge = strategic_merge if t.rt.builtin else merge_patch
    new = merge(current.clone(), applied)
    backend.access.check_write(t.rt, ns, t.user, new)
    new, warnings = await admit(backend, t, current.obj, new, dry_run, warnings)
    new = await to_storage(backend, t, new)
    entry = backend.store.update(t.rt, ns, t.name, new, t.sub, dry_run=dry_run)
    return object_response(req, t, await shown(backend, t, entry), 200, warnings)
