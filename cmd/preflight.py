"""``kubetrio manifests --check``: what a cluster lacks for the manifests, before any is applied.

``kubectl apply`` of a kit the cluster cannot take applies what it can and refuses the rest,
leaving a half-installed kit behind (webhook configurations without their certificate refuse
every write of their kinds). This asks first, read-only, and prints one line per thing missing:

- an API group version or kind the server does not serve, and is not among the kit's own CRDs
  (cert-manager's Certificate and Issuer, prometheus-operator's ServiceMonitor, an API version
  the server no longer serves), with what to install or which flag leaves it out;
- a permission ``kubectl apply`` needs (get, create and patch on each kind, where each object
  goes) and the kubeconfig's user lacks, as the server's SelfSubjectAccessReview answers.

Exit status 0 when nothing is missing, 1 otherwise, 2 when the cluster cannot be asked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import msgspec
import trio

from kubetrio.cmd.kustomize import CLUSTER_SCOPED, Document
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.typed import Client

__all__ = ["check", "lacking"]

# kubectl apply reads each object, then creates it or patches it.
APPLY_VERBS: Final = ("get", "create", "patch")
# What provides the kinds of a group the kit uses but does not define, and how to do without.
HINTS: Final = {
    "cert-manager.io": "install cert-manager (https://cert-manager.io/docs/installation/), "
    "or leave out --webhooks",
    "monitoring.coreos.com": "install prometheus-operator, or pass --no-servicemonitor",
}


@dataclass(frozen=True)
class Resource:
    """Where objects of one kind are written."""

    group: str
    plural: str
    namespaced: bool


class _Served(msgspec.Struct):
    name: str
    kind: str
    namespaced: bool


class _ServedList(msgspec.Struct):
    resources: list[_Served] = msgspec.field(default_factory=list)


class _Review(msgspec.Struct):
    allowed: bool = False


class _ReviewAnswer(msgspec.Struct):
    status: _Review = msgspec.field(default_factory=_Review)


def check(documents: list[Document], kubeconfig: str | None, context: str | None) -> int:
    """Print what the cluster of ``kubeconfig`` lacks for ``documents``; the exit status."""
    try:
        client = Client.from_kubeconfig(kubeconfig, context)
    except KubeconfigError as error:
        print(f"kubetrio: --check: {error}", file=sys.stderr)
        return 2
    try:
        lines = trio.run(lacking, client, documents)
    except (ApiError, OSError) as error:
        print(f"kubetrio: --check: the API server cannot be asked: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    if lines:
        return 1
    print(f"ok: the cluster serves every kind of the {len(documents)} objects, and you may apply")
    return 0


async def lacking(client: Client, documents: list[Document]) -> list[str]:
    """One line per API, kind or permission the cluster lacks for ``documents``."""
    defined = _defined_by_crds(documents)
    lines: list[str] = []
    served: dict[str, dict[str, _Served] | None] = {}
    missing: dict[str, list[str]] = {}
    resources: dict[Resource, set[str]] = {}
    for doc in documents:
        api_version, kind = str(doc["apiVersion"]), str(doc["kind"])
        namespace = "" if kind in CLUSTER_SCOPED else doc["metadata"].get("namespace", "")
        resource = defined.get((api_version, kind))
        if resource is None:
            if api_version not in served:
                served[api_version] = await _discover(client, api_version)
            listing = served[api_version]
            entry = None if listing is None else listing.get(kind)
            if entry is None:
                missing.setdefault(api_version, [])
                if kind not in missing[api_version]:
                    missing[api_version].append(kind)
                continue
            resource = Resource(api_version.rpartition("/")[0], entry.name, entry.namespaced)
        resources.setdefault(resource, set()).add(namespace if resource.namespaced else "")
    for api_version, kinds in missing.items():
        group = api_version.rpartition("/")[0]
        what = "API" if served[api_version] is None else "kinds in"
        hint = HINTS.get(group, "install what serves them, or leave those objects out")
        lines.append(f"missing {what} {api_version} ({', '.join(kinds)}): {hint}")
    for resource, namespaces in resources.items():
        for namespace in sorted(namespaces):
            refused = [
                verb
                for verb in APPLY_VERBS
                if not await _allowed(client, resource, verb, namespace)
            ]
            if refused:
                name = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
                where = f"in namespace {namespace}" if namespace else "cluster-wide"
                lines.append(f"forbidden: {', '.join(refused)} {name} {where} (kubectl apply)")
    return lines


def _defined_by_crds(documents: Iterable[Document]) -> dict[tuple[str, str], Resource]:
    """The kinds the manifests' own CRDs define: the server learns them by the apply."""
    defined = {}
    for doc in documents:
        if doc["kind"] != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        resource = Resource(spec["group"], spec["names"]["plural"], spec["scope"] == "Namespaced")
        for version in spec["versions"]:
            defined[f"{spec['group']}/{version['name']}", spec["names"]["kind"]] = resource
    return defined


async def _discover(client: Client, api_version: str) -> dict[str, _Served] | None:
    """The kinds one group version serves (its subresources left out); None when it is not
    served at all."""
    root = "/apis" if "/" in api_version else "/api"
    try:
        body = await client.request("GET", f"{root}/{api_version}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    listed = msgspec.json.decode(body, type=_ServedList).resources
    return {r.kind: r for r in listed if "/" not in r.name}


async def _allowed(client: Client, resource: Resource, verb: str, namespace: str) -> bool:
    attributes = {"group": resource.group, "resource": resource.plural, "verb": verb}
    if namespace:
        attributes["namespace"] = namespace
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    body = await client.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body=msgspec.json.encode(review),
    )
    return msgspec.json.decode(body, type=_ReviewAnswer).status.allowed
