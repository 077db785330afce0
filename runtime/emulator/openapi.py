"""OpenAPI v3 endpoints: just what kubectl 1.33 reads.

kubectl (``--validate=strict``, the default) asks /openapi/v3 whether each kind's PATCH operation
takes the ``fieldValidation`` query parameter; if it finds none it falls back to client-side
validation, which needs /openapi/v2 as protobuf. So each group/version document lists one PATCH
operation per resource with that parameter and the ``x-kubernetes-group-version-kind``
extension. The operations carry no request body, so ``kubectl apply`` builds strategic merge
patches from its compiled-in types for built-ins and JSON merge patches for custom resources,
exactly as it does against a server without schemas. /openapi/v2 stays 404.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from kubetrio.runtime.emulator import errors
from kubetrio.runtime.emulator.http import Request, Response
from kubetrio.runtime.emulator.kinds import ResourceType, ResourceTypes

_PARAMS = [
    {"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
    for n in ("dryRun", "fieldManager", "fieldValidation", "force")
]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _paths(rt: ResourceType, version: str) -> dict[str, Any]:
    prefix = "/" + _gv_path(rt.group, version)
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    op = {
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": version, "kind": rt.kind},
        "x-kubernetes-action": "patch",
        "parameters": _PARAMS,
        "responses": {"200": {"description": "OK"}},
    }
    return {f"{prefix}{scope}/{rt.plural}/{{name}}": {"patch": op}}


def gv_document(types: ResourceTypes, group: str, version: str) -> dict[str, Any] | None:
    served = types.in_group_version(group, version)
    if not served:
        return None
    paths: dict[str, Any] = {}
    for rt in sorted(served, key=lambda r: r.plural):
        paths.update(_paths(rt, version))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def serve(req: Request, types: ResourceTypes, rest: list[str]) -> Response:
    if not rest or rest[0] != "v3":
        raise errors.no_such_resource()
    if len(rest) == 1:
        index: dict[str, Any] = {}
        for group, versions in sorted(types.group_versions().items()):
            for v in versions:
                doc = gv_document(types, group, v)
                digest = hashlib.sha256(msgspec.json.encode(doc)).hexdigest()[:32].upper()
                path = _gv_path(group, v)
                index[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
        return Response(200, msgspec.json.encode({"paths": index}))
    gv = rest[1:]
    if gv[0] == "api" and len(gv) == 2:
        doc = gv_document(types, "", gv[1])
    elif gv[0] == "apis" and len(gv) == 3:
        doc = gv_document(types, gv[1], gv[2])
    else:
        doc = None
    if doc is None:
        raise errors.no_such_resource()
    return Response(200, msgspec.json.encode(doc))
