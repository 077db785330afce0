"""Shorthands the corpus is written in: requests by verb, paths, and small objects."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..runner import APPLY, JSONPATCH, MERGE, STRATEGIC, Req

NS = "/api/v1/namespaces/$ns"
APPS = "/apis/apps/v1/namespaces/$ns"
CMS = f"{NS}/configmaps"
SECRETS = f"{NS}/secrets"
PODS = f"{NS}/pods"
SERVICES = f"{NS}/services"
ACCOUNTS = f"{NS}/serviceaccounts"
DEPLOYMENTS = f"{APPS}/deployments"
REPLICASETS = f"{APPS}/replicasets"
STATEFULSETS = f"{APPS}/statefulsets"
PDBS = "/apis/policy/v1/namespaces/$ns/poddisruptionbudgets"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/$ns/leases"
EVENTS = f"{NS}/events"
NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/$ns/events"
NODES = "/api/v1/nodes"
PVS = "/api/v1/persistentvolumes"
PVCS = f"{NS}/persistentvolumeclaims"
ROLES = "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/roles"
ROLEBINDINGS = "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/rolebindings"


def get(path: str, **kw: Any) -> Req:
    return Req("GET", path, **kw)


def post(path: str, body: Any, **kw: Any) -> Req:
    return Req("POST", path, body, **kw)


def put(path: str, body: Any, **kw: Any) -> Req:
    return Req("PUT", path, body, **kw)


def delete(path: str, body: Any = None, **kw: Any) -> Req:
    return Req("DELETE", path, body, **kw)


def merge(path: str, body: Any, **kw: Any) -> Req:
    return Req("PATCH", path, body, ctype=MERGE, **kw)


def strategic(path: str, body: Any, **kw: Any) -> Req:
    return Req("PATCH", path, body, ctype=STRATEGIC, **kw)


def jsonpatch(path: str, ops: Any, **kw: Any) -> Req:
    return Req("PATCH", path, ops, ctype=JSONPATCH, **kw)


def apply(path: str, body: Any, manager: str = "probe", force: bool = False, **kw: Any) -> Req:
    sep = "&" if "?" in path else "?"
    query = f"{sep}fieldManager={manager}" + ("&force=true" if force else "")
    return Req("PATCH", path + query, body, ctype=APPLY, **kw)


def setup(req: Req) -> Req:
    """A step whose status code alone is compared."""
    return replace(req, compare=False)


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": {"a": "1"} if data is None else data,
    }


def container(name: str = "c", image: str = "busybox", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def pod(name: str, *containers: dict[str, Any], labels: Any = None, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if labels is not None:
        md["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": {"containers": list(containers) or [container()], **spec},
    }


def template(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": [container()]}}


def deployment(
    name: str, replicas: int | None = 1, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    labels = labels or {"app": name}
    body: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": template(labels),
        **spec,
    }
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": body,
    }


def replicaset(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(labels),
            **spec,
        },
    }


def statefulset(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": template(labels),
            **spec,
        },
    }


def service(name: str, *ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": name},
            "ports": list(ports) or [{"port": 80}],
            **spec,
        },
    }


def pdb(name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": selector}, **spec},
    }


def eviction(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": "$ns"},
        **extra,
    }


def names(body: Any) -> Any:
    """A list answer reduced to its items' names (and the list's own kind and metadata)."""
    if not isinstance(body, dict) or "items" not in body:
        return body
    return {
        "kind": body.get("kind"),
        "metadata": body.get("metadata"),
        "items": [i.get("metadata", {}).get("name") for i in body.get("items") or []],
    }


def event_view(events: list[Any]) -> list[Any]:
    """Watch events reduced to type, kind, name and (for bookmarks) annotations."""
    out = []
    for e in events:
        if not isinstance(e, dict):
            out.append(e)
            continue
        obj = e.get("object") or {}
        md = obj.get("metadata") or {}
        shown: dict[str, Any] = {"type": e.get("type"), "kind": obj.get("kind")}
        if e.get("type") == "BOOKMARK":
            shown["annotations"] = md.get("annotations")
        elif e.get("type") == "ERROR":
            shown["object"] = obj
        else:
            shown["name"] = md.get("name")
            shown["data"] = obj.get("data")
        out.append(shown)
    return out
