"""The operations /openapi/v2 and /openapi/v3 publish for each served resource, as the
apiserver's endpoint installer lays them out: collection, item, watch and subresource paths,
each operation with its action, group/version/kind and query parameters.

kubectl reads two things here: whether PATCH takes ``fieldValidation`` (else it validates
client-side) and which patch types PATCH accepts (strategic merge only for built-ins: that
decides whether ``kubectl apply`` sends a strategic or a JSON merge patch).
"""

from __future__ import annotations

import re
from typing import Any

from kubetrio.emulator.kinds import OBJECT_VIEWS, ResourceType
from kubetrio.emulator.openapi_schemas import META, builtin_name, definition_name

_PARAM_DOCS = {
    "allowWatchBookmarks": ("boolean", "Ask for BOOKMARK watch events."),
    "continue": ("string", "The continue token of the previous page of a chunked list."),
    "dryRun": ("string", "When present, modifications are not persisted. Valid values: All."),
    "fieldManager": ("string", "Name of the actor making the change (field ownership)."),
    "fieldSelector": ("string", "Restrict the returned objects by their fields."),
    "fieldValidation": (
        "string",
        "How the server treats unknown or duplicate fields in the request body: Ignore "
        "(drop them), Warn (drop them and say so in a Warning header, the default) or Strict "
        "(fail the request).",
    ),
    "force": ("boolean", "Apply requests only: take ownership of conflicting fields."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted; 0 means now."),
    "labelSelector": ("string", "Restrict the returned objects by their labels."),
    "limit": ("integer", "Maximum number of objects in one page of a list."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "propagationPolicy": ("string", "Garbage collection: Orphan, Background or Foreground."),
    "resourceVersion": ("string", "Which resourceVersion the read must be at least as new as."),
    "resourceVersionMatch": ("string", "How resourceVersion applies to a list."),
    "sendInitialEvents": ("boolean", "Start a watch with the current state as ADDED events."),
    "timeoutSeconds": ("integer", "Timeout of a list or watch call."),
    "watch": ("boolean", "Watch for changes instead of listing."),
}
_LIST = [
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
]
_WRITE = ["dryRun", "fieldManager", "fieldValidation"]
_DELETE = ["dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"]
_PATCH_TYPES = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
]
_SMP = "application/strategic-merge-patch+json"
# Subresources that take a body of another kind (POST only), with that kind.
_POST_SUBS = {
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
}


def gv_prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _camel(group: str, version: str) -> str:
    """``apps``/``v1`` -> ``AppsV1``; the core group is ``Core``, ``.k8s.io`` is dropped."""
    g = group.removesuffix(".k8s.io") or "core"
    words = [w for w in re.split(r"[.\-]", g) if w]
    return "".join(w[:1].upper() + w[1:] for w in words) + version[:1].upper() + version[1:]


class _Op:
    """Builds one operation in either spec version from the same description."""

    def __init__(self, v3: bool, rt: ResourceType, version: str) -> None:
        self.v3 = v3
        self.rt = rt
        self.version = version
        self.tag = _camel(rt.group, version)

    def ref(self, name: str) -> dict[str, str]:
        return {"$ref": ("#/components/schemas/" if self.v3 else "#/definitions/") + name}

    def param(self, name: str) -> dict[str, Any]:
        type_, doc = _PARAM_DOCS[name]
        p: dict[str, Any] = {"name": name, "in": "query", "description": doc, "uniqueItems": True}
        if self.v3:
            p["schema"] = {"type": type_}
        else:
            p["type"] = type_
        return p

    def build(
        self,
        action: str,
        op_id: str,
        gvk: tuple[str, str, str],
        params: list[str],
        result: str,
        body: str | None = None,
        body_types: list[str] | None = None,
        codes: tuple[str, ...] = ("200",),
    ) -> dict[str, Any]:
        op: dict[str, Any] = {
            "description": f"{action} {self.rt.kind}",
            "operationId": op_id,
            "tags": [self.tag],
            "parameters": [self.param(p) for p in params],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": gvk[0], "kind": gvk[2], "version": gvk[1]},
        }
        responses: dict[str, Any] = {}
        for code in codes:
            desc = {"200": "OK", "201": "Created", "202": "Accepted"}[code]
            if self.v3:
                responses[code] = {
                    "description": desc,
                    "content": {"application/json": {"schema": self.ref(result)}},
                }
            else:
                responses[code] = {"description": desc, "schema": self.ref(result)}
        responses["401"] = {"description": "Unauthorized"}
        op["responses"] = responses
        if body is not None:
            types = body_types or ["*/*"]
            if self.v3:
                op["requestBody"] = {
                    "content": {t: {"schema": self.ref(body)} for t in types},
                    "required": action != "delete",
                }
            else:
                op["consumes"] = types
                op["parameters"].insert(
                    0, {"in": "body", "name": "body", "required": True, "schema": self.ref(body)}
                )
        if not self.v3:
            op["produces"] = ["application/json"]
            op["schemes"] = ["https"]
        return op


def resource_paths(rt: ResourceType, version: str, v3: bool) -> dict[str, Any]:
    """Every path the apiserver installs for one resource in one version."""
    o = _Op(v3, rt, version)
    prefix = gv_prefix(rt.group, version)
    gvk = (rt.group, version, rt.kind)
    obj = definition_name(rt, version)
    lst = definition_name(rt, version, rt.kind + "List")
    ns = "Namespaced" if rt.namespaced else ""
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    kind, tag = rt.kind, o.tag
    patch_types = [*_PATCH_TYPES, _SMP] if rt.builtin else list(_PATCH_TYPES)
    path_params = _path_params(v3, rt, named=False)
    named_params = _path_params(v3, rt, named=True)
    status, event = META + "Status", META + "WatchEvent"
    coll = f"{prefix}{scope}/{rt.plural}"
    item = coll + "/{name}"
    paths: dict[str, Any] = {
        coll: {
            "parameters": path_params,
            "get": o.build("list", f"list{tag}{ns}{kind}", gvk, _LIST, lst),
            "post": o.build(
                "post",
                f"create{tag}{ns}{kind}",
                gvk,
                _WRITE,
                obj,
                obj,
                codes=("200", "201", "202"),
            ),
            "delete": o.build(
                "deletecollection",
                f"deletecollection{tag}{ns}{kind}",
                gvk,
                _DELETE + _LIST,
                status,
                META + "DeleteOptions",
            ),
        },
        item: {
            "parameters": named_params,
            "get": o.build("get", f"read{tag}{ns}{kind}", gvk, [], obj),
            "put": o.build(
                "put", f"replace{tag}{ns}{kind}", gvk, _WRITE, obj, obj, codes=("200", "201")
            ),
            "patch": o.build(
                "patch",
                f"patch{tag}{ns}{kind}",
                gvk,
                [*_WRITE, "force"],
                obj,
                META + "Patch",
                patch_types,
                codes=("200", "201"),
            ),
            "delete": o.build(
                "delete",
                f"delete{tag}{ns}{kind}",
                gvk,
                _DELETE,
                status,
                META + "DeleteOptions",
                codes=("200", "202"),
            ),
        },
        f"{prefix}/watch{scope}/{rt.plural}": {
            "parameters": path_params,
            "get": o.build("watchlist", f"watch{tag}{ns}{kind}List", gvk, _LIST, event),
        },
        f"{prefix}/watch{scope}/{rt.plural}" + "/{name}": {
            "parameters": named_params,
            "get": o.build("watch", f"watch{tag}{ns}{kind}", gvk, _LIST, event),
        },
    }
    if rt.namespaced:
        every = _path_params(v3, rt, named=False, namespaced=False)
        paths[f"{prefix}/{rt.plural}"] = {
            "parameters": every,
            "get": o.build("list", f"list{tag}{kind}ForAllNamespaces", gvk, _LIST, lst),
        }
        paths[f"{prefix}/watch/{rt.plural}"] = {
            "parameters": every,
            "get": o.build("watchlist", f"watch{tag}{kind}ListForAllNamespaces", gvk, _LIST, event),
        }
    for sub in rt.subresources:
        cap = sub[:1].upper() + sub[1:]
        if sub in _POST_SUBS:
            g, v, k = _POST_SUBS[sub]
            body = builtin_name(g, v, k) or k
            paths[f"{item}/{sub}"] = {
                "parameters": named_params,
                "post": o.build(
                    "post",
                    f"create{tag}{ns}{kind}{cap}",
                    (g, v, k),
                    _WRITE,
                    body,
                    body,
                    codes=("200", "201", "202"),
                ),
            }
            continue
        # status reads and writes the object itself; scale an autoscaling/v1 Scale.
        sub_gvk = gvk if sub in OBJECT_VIEWS else ("autoscaling", "v1", "Scale")
        result = obj if sub in OBJECT_VIEWS else builtin_name(*sub_gvk) or "Scale"
        paths[f"{item}/{sub}"] = {
            "parameters": named_params,
            "get": o.build("get", f"read{tag}{ns}{kind}{cap}", sub_gvk, [], result),
            "put": o.build(
                "put",
                f"replace{tag}{ns}{kind}{cap}",
                sub_gvk,
                _WRITE,
                result,
                result,
                codes=("200", "201"),
            ),
            "patch": o.build(
                "patch",
                f"patch{tag}{ns}{kind}{cap}",
                sub_gvk,
                [*_WRITE, "force"],
                result,
                META + "Patch",
                patch_types,
                codes=("200", "201"),
            ),
        }
    return paths


def _path_params(
    v3: bool, rt: ResourceType, named: bool, namespaced: bool | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def path_param(name: str, doc: str) -> dict[str, Any]:
        p: dict[str, Any] = {"name": name, "in": "path", "description": doc, "required": True}
        p["uniqueItems"] = True
        if v3:
            p["schema"] = {"type": "string"}
        else:
            p["type"] = "string"
        return p

    if named:
        out.append(path_param("name", f"name of the {rt.kind}"))
    if rt.namespaced if namespaced is None else namespaced:
        out.append(path_param("namespace", "object name and auth scope, such as for teams"))
    pretty: dict[str, Any] = {
        "name": "pretty",
        "in": "query",
        "description": "If 'true', then the output is pretty printed.",
        "uniqueItems": True,
    }
    if v3:
        pretty["schema"] = {"type": "string"}
    else:
        pretty["type"] = "string"
    out.append(pretty)
    return out
