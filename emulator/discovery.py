"""Discovery documents and /version: the legacy documents (APIVersions, APIGroupList,
APIGroup, APIResourceList) and aggregated discovery (apidiscovery.k8s.io/v2, one
APIGroupDiscoveryList for /api and one for /apis), which kubectl 1.30 and later ask for first.
Both are built from the served types each time, so they follow CRDs as they come and go.
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


# ------------------------------------------------------------------ aggregated discovery

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_PLAIN = ("application/json", "application/*", "*/*", "application/yaml")
_NOT_ACCEPTABLE = (
    "only the following media types are accepted: application/json, application/yaml, "
    "application/vnd.kubernetes.protobuf"
)


def negotiate(accept: str) -> str | None:
    """``"aggregated"`` when ``accept`` asks for apidiscovery.k8s.io/v2 (kubectl 1.30 on
    does, with the legacy documents as its fallback), ``"legacy"`` when it takes plain JSON,
    None when it takes nothing served (v2beta1 alone: kube answers 406)."""
    plain = not accept.strip()
    for entry in accept.split(","):
        media, *params = (p.strip() for p in entry.split(";"))
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if options.get("g") == "apidiscovery.k8s.io":
            if options.get("v") == "v2" and options.get("as") == "APIGroupDiscoveryList":
                return "aggregated"
            continue
        if media in _PLAIN or media.startswith("application/vnd.kubernetes.protobuf"):
            plain = True
    return "legacy" if plain else None


def not_acceptable() -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": _NOT_ACCEPTABLE,
        "reason": "NotAcceptable",
        "code": 406,
    }


def _kind_ref(entry: dict[str, Any]) -> dict[str, str]:
    return {
        "group": entry.get("group", ""),
        "version": entry.get("version", ""),
        "kind": entry["kind"],
    }


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    """One resource as apidiscovery.k8s.io/v2 describes it: the legacy entries of it and its
    subresources folded into one."""
    main, *subs = _resource(rt)
    out: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _kind_ref(main),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": main["verbs"],
    }
    for key in ("shortNames", "categories"):
        if key in main:
            out[key] = main[key]
    if subs:
        out["subresources"] = [
            {
                "subresource": s["name"].partition("/")[2],
                "responseKind": _kind_ref(s),
                "verbs": s["verbs"],
            }
            for s in sorted(subs, key=lambda s: str(s["name"]))
        ]
    return out


def _aggregated_group(types: ResourceTypes, group: str, versions: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": group} if group else {},
        "versions": [
            {
                "version": v,
                "resources": [
                    _aggregated_resource(rt)
                    for rt in sorted(types.in_group_version(group, v), key=lambda r: r.plural)
                ],
                "freshness": "Current",
            }
            for v in versions
        ],
    }


def aggregated(types: ResourceTypes, legacy_core: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList of /api (``legacy_core``) or /apis."""
    groups = types.group_versions()
    if legacy_core:
        items = [_aggregated_group(types, "", groups.get("", ["v1"]))]
    else:
        items = [_aggregated_group(types, g, vs) for g, vs in sorted(groups.items()) if g]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
