"""What the server says about itself: discovery (legacy and aggregated), OpenAPI v2/v3,
version and health, and Table / PartialObjectMetadata answers."""

from __future__ import annotations

from typing import Any

from ..crd import WIDGETS, widget
from ..runner import TABLE, Req, probe
from .kinds import WATCHED
from .objects import (
    CMS,
    DEPLOYMENTS,
    NODES,
    PODS,
    SERVICES,
    cm,
    delete,
    deployment,
    get,
    pod,
    post,
    service,
    setup,
)

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
PARTIAL = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PARTIAL_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

# Groups a kubetrio controller or the corpus touches; discovery is compared on these.
GROUPS = (
    "",
    "apps",
    "batch",
    "policy",
    "coordination.k8s.io",
    "events.k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "networking.k8s.io",
    "discovery.k8s.io",
    "scheduling.k8s.io",
    "node.k8s.io",
    "certificates.k8s.io",
)


def group_names(body: Any) -> Any:
    if not isinstance(body, dict):
        return body
    return {
        "kind": body.get("kind"),
        "apiVersion": body.get("apiVersion"),
        "groups": sorted(
            (
                g.get("name") or g.get("metadata", {}).get("name", ""),
                g.get("preferredVersion", {}).get("version"),
            )
            for g in body.get("groups") or body.get("items") or []
        ),
    }


def resources(body: Any) -> Any:
    """An APIResourceList by resource name: kind, scope, verbs, short names, categories."""
    if not isinstance(body, dict) or "resources" not in body:
        return body
    return {
        "kind": body.get("kind"),
        "groupVersion": body.get("groupVersion"),
        "resources": {
            r["name"]: {
                "kind": r.get("kind"),
                "namespaced": r.get("namespaced"),
                "verbs": sorted(r.get("verbs") or []),
                "shortNames": r.get("shortNames"),
                "categories": r.get("categories"),
                "singularName": r.get("singularName"),
                "group": r.get("group"),
                "version": r.get("version"),
            }
            for r in body["resources"]
        },
    }


def aggregated(body: Any) -> Any:
    """Aggregated discovery for the groups in GROUPS: versions and resources by name."""
    if not isinstance(body, dict):
        return body
    out: dict[str, Any] = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")}
    for item in body.get("items") or []:
        name = item.get("metadata", {}).get("name", "")
        if name not in GROUPS and name != "conformance.kubetrio.io":
            continue
        versions = {}
        for v in item.get("versions") or []:
            versions[v["version"]] = {
                r["resource"]: {
                    "kind": (r.get("responseKind") or {}).get("kind"),
                    "scope": r.get("scope"),
                    "verbs": sorted(r.get("verbs") or []),
                    "subresources": sorted(s["subresource"] for s in r.get("subresources") or []),
                }
                for r in v.get("resources") or []
            }
        out[name or "core"] = versions
    return out


def openapi_v2(body: Any) -> Any:
    if not isinstance(body, dict):
        return type(body).__name__
    defs = body.get("definitions") or {}
    return {
        "swagger": body.get("swagger"),
        "has Pod": "io.k8s.api.core.v1.Pod" in defs,
        "has Deployment": "io.k8s.api.apps.v1.Deployment" in defs,
        "pod paths": sorted(
            p
            for p in body.get("paths") or {}
            if p.startswith("/api/v1/namespaces/{namespace}/pods/{name}")
        ),
    }


def openapi_v3(body: Any) -> Any:
    if not isinstance(body, dict):
        return type(body).__name__
    return {
        "core and apps": sorted(
            p for p in body.get("paths") or {} if p in ("api/v1", "apis/apps/v1", "apis/policy/v1")
        ),
        "entries have serverRelativeURL": all(
            "serverRelativeURL" in v for v in (body.get("paths") or {}).values()
        ),
    }


def openapi_v3_core(body: Any) -> Any:
    if not isinstance(body, dict):
        return type(body).__name__
    schemas = body.get("components", {}).get("schemas", {})
    pod = schemas.get("io.k8s.api.core.v1.Pod", {})
    return {
        "openapi": body.get("openapi"),
        "Pod properties": sorted(pod.get("properties", {})),
        "Pod gvk": pod.get("x-kubernetes-group-version-kind"),
    }


def version(body: Any) -> Any:
    return sorted(body) if isinstance(body, dict) else body


def table(body: Any) -> Any:
    """A Table without the Age column's values (times differ between any two servers)."""
    if not isinstance(body, dict) or body.get("kind") != "Table":
        return body
    cols = [c.get("name") for c in body.get("columnDefinitions") or []]
    rows = []
    for row in body.get("rows") or []:
        cells = [
            c if name != "Age" else "<age>"
            for name, c in zip(cols, row.get("cells") or [], strict=False)
        ]
        rows.append({"cells": cells, "object": row.get("object")})
    return {
        "kind": body.get("kind"),
        "apiVersion": body.get("apiVersion"),
        "metadata": body.get("metadata"),
        "columnDefinitions": body.get("columnDefinitions"),
        "rows": rows,
    }


def tbl(path: str, **kw: Any) -> Req:
    return get(path, accept=TABLE, view=table, headers=("Content-Type",), **kw)


PROBES = [
    probe("discovery.api", get("/api", view=lambda b: {k: b.get(k) for k in ("kind", "versions")})),
    probe("discovery.apis", get("/apis", view=group_names)),
    probe("discovery.core-v1", get("/api/v1", view=resources)),
    probe("discovery.apps-v1", get("/apis/apps/v1", view=resources)),
    probe("discovery.policy-v1", get("/apis/policy/v1", view=resources)),
    probe("discovery.coordination-v1", get("/apis/coordination.k8s.io/v1", view=resources)),
    probe("discovery.apps-group", get("/apis/apps")),
    probe(
        "discovery.aggregated-apis",
        get("/apis", accept=AGGREGATED, view=aggregated, headers=("Content-Type",)),
        crd=True,
    ),
    probe(
        "discovery.aggregated-api",
        get("/api", accept=AGGREGATED, view=aggregated, headers=("Content-Type",)),
    ),
    probe(
        "discovery.custom-resource-group",
        get("/apis/conformance.kubetrio.io/v1", view=resources),
        crd=True,
    ),
    probe("discovery.missing-group", get("/apis/nope.example.com/v1")),
    probe("discovery.missing-resource", get("/api/v1/nothings")),
    probe("discovery.missing-namespaced-resource", get("/api/v1/namespaces/$ns/nothings")),
    probe("openapi.v2", get("/openapi/v2", view=openapi_v2)),
    probe("openapi.v3", get("/openapi/v3", view=openapi_v3)),
    probe("openapi.v3-core", get("/openapi/v3/api/v1", view=openapi_v3_core)),
    probe("openapi.v3-missing", get("/openapi/v3/apis/nope.example.com/v1")),
    probe("server.version", get("/version", view=version)),
    probe("server.healthz", get("/healthz"), get("/readyz"), get("/livez")),
    # -- tables
    probe("table.configmaps", setup(post(CMS, cm("c", {"a": "1", "b": "2"}))), tbl(CMS)),
    probe("table.configmap-single", setup(post(CMS, cm("c"))), tbl(f"{CMS}/c")),
    probe("table.pods", setup(post(PODS, pod("p"))), tbl(PODS)),
    probe("table.deployments", setup(post(DEPLOYMENTS, deployment("d"))), tbl(DEPLOYMENTS)),
    probe("table.services", setup(post(SERVICES, service("s", clusterIP="None"))), tbl(SERVICES)),
    probe("table.namespace", tbl("/api/v1/namespaces/$ns")),
    probe("table.nodes-empty", tbl(f"{NODES}?labelSelector=probe%3D$ns")),
    probe(
        "table.include-object-none",
        setup(post(CMS, cm("c"))),
        tbl(f"{CMS}?includeObject=None"),
    ),
    probe(
        "table.include-object-object",
        setup(post(CMS, cm("c"))),
        tbl(f"{CMS}?includeObject=Object"),
    ),
    probe(
        "table.custom-resource-columns",
        setup(post(WIDGETS, widget("w", color="red"))),
        tbl(WIDGETS),
        crd=True,
    ),
    probe(
        "table.partial-object-metadata-list",
        setup(post(CMS, cm("c", labels={"a": "b"}))),
        get(CMS, accept=PARTIAL, headers=("Content-Type",)),
    ),
    probe(
        "table.partial-object-metadata",
        setup(post(CMS, cm("c"))),
        get(f"{CMS}/c", accept=PARTIAL_ONE, headers=("Content-Type",)),
    ),
    probe(
        "table.unsupported-accept",
        get(CMS, accept="application/json;as=Graph;g=meta.k8s.io;v=v1"),
    ),
    # -- aggregated discovery: kubectl's Accept (v2 with the legacy fallback), v2beta1 alone
    probe(
        "discovery.aggregated-kubectl-accept",
        get(
            "/api",
            accept=f"{AGGREGATED},application/json;g=apidiscovery.k8s.io;v=v2beta1;"
            "as=APIGroupDiscoveryList,application/json",
            view=lambda b: (b.get("kind"), b.get("apiVersion")),
            headers=("Content-Type",),
        ),
    ),
    probe(
        "discovery.aggregated-v2beta1-only",
        get(
            "/apis",
            accept="application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        ),
    ),
    probe(
        "discovery.aggregated-storage-group",
        get(
            "/apis",
            accept=AGGREGATED,
            view=lambda b: [
                i for i in b.get("items", []) if i["metadata"].get("name") == "storage.k8s.io"
            ],
        ),
    ),
    probe("discovery.storage-v1", get("/apis/storage.k8s.io/v1", view=resources)),
    probe("discovery.discovery-v1", get("/apis/discovery.k8s.io/v1", view=resources)),
    probe("discovery.networking-v1", get("/apis/networking.k8s.io/v1", view=resources)),
    # -- the columns of the kinds controllers watch
    *(
        probe(
            f"table.{plural}",
            setup(post(base, body)),
            tbl(f"{base}?fieldSelector=metadata.name%3D{body['metadata']['name']}"),
            setup(delete(f"{base}/{body['metadata']['name']}")),
        )
        for plural, base, body in WATCHED
    ),
]
