"""Discovery documents (legacy, unaggregated) and /version.

kubectl 1.33 asks for aggregated discovery (apidiscovery.k8s.io/v2) first; answering with the
legacy documents and ``Content-Type: application/json`` makes client-go fall back to legacy
discovery, which is simpler to keep correct as CRDs come and go.
"""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.kinds import OBJECT_VIEWS, ResourceType, ResourceTypes

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]

VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-kubetrio",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-04-23T00:00:00Z",
    "goVersion": "go1.24.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(types: ResourceTypes) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in sorted(types.group_versions().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(types: ResourceTypes, group: str) -> dict[str, Any] | None:
    vs = types.group_versions().get(group)
    if not vs or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, vs)}


def _resource(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs) or VERBS,
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    out = [main]
    for sub in rt.subresources:
        if sub in OBJECT_VIEWS:
            out.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        elif sub == "finalize":
            out.append(
                {
                    "name": f"{rt.plural}/finalize",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": ["update"],
                }
            )
        elif sub == "eviction":
            out.append(
                {
                    "name": f"{rt.plural}/eviction",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "group": "policy",
                    "version": "v1",
                    "kind": "Eviction",
                    "verbs": ["create"],
                }
            )
        elif sub == "binding":
            out.append(
                {
                    "name": f"{rt.plural}/binding",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": "Binding",
                    "verbs": ["create"],
                }
            )
        elif sub == "token":
            out.append(
                {
                    "name": f"{rt.plural}/token",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "group": "authentication.k8s.io",
                    "version": "v1",
                    "kind": "TokenRequest",
                    "verbs": ["create"],
                }
            )
        elif sub == "scale":
            out.append(
                {
                    "name": f"{rt.plural}/scale",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
    return out


def api_resource_list(types: ResourceTypes, group: str, version: str) -> dict[str, Any] | None:
    served = types.in_group_version(group, version)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for rt in sorted(served, key=lambda r: r.plural):
        resources.extend(_resource(rt))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
