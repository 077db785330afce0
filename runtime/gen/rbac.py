"""RBAC declarations: what each controller needs from the API server, stated next to it.

A controller package exposes ``RBAC = Permissions(...)`` beside its ``setup``; ``kubetrio
rbac`` merges the enabled controllers' declarations with the framework's own and prints the
ClusterRole and the leader-election Role that let exactly those requests through. Keeping the
rules beside the code that makes the requests is what keeps them exact: a new request and its
rule change in one commit, and the e2e proof (every shipped rule used, nothing denied) catches
either one alone.

Merging is controller-gen's: verbs are unioned per (group, resource), then resources needing
the same verbs in one group become one rule, everything sorted, so the output is the same
whatever order the declarations came in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import msgspec

from kubetrio.api.registry import KindInfo

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
MANAGER_ROLE = "kubetrio-manager-role"
LEADER_ELECTION_ROLE = "kubetrio-leader-election-role"
DEFAULT_NAMESPACE = "kubetrio-system"


class PolicyRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """One rule of a Role or ClusterRole, in the API's field names and order."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = msgspec.field(default=(), name="apiGroups")
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = msgspec.field(default=(), name="resourceNames")
    non_resource_urls: tuple[str, ...] = msgspec.field(default=(), name="nonResourceURLs")

    def to_dict(self) -> dict[str, Any]:
        """As kubebuilder writes it: apiGroups, resources, resourceNames, then verbs."""
        out: dict[str, Any] = {}
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        else:
            out["apiGroups"] = list(self.api_groups)
            out["resources"] = list(self.resources)
            if self.resource_names:
                out["resourceNames"] = list(self.resource_names)
        out["verbs"] = list(self.verbs)
        return out

    def atoms(self) -> set[tuple[str, str, str]]:
        """(apiGroup, resource, verb) triples this rule grants (URL rules: ("", url, verb))."""
        if self.non_resource_urls:
            return {("", url, verb) for url in self.non_resource_urls for verb in self.verbs}
        return {
            (group, resource, verb)
            for group in self.api_groups
            for resource in self.resources
            for verb in self.verbs
        }


def rule(group: str, resources: Iterable[str], verbs: Iterable[str]) -> PolicyRule:
    """A rule on ``resources`` (``"pods/eviction"`` for a subresource) of one API group."""
    return PolicyRule(verbs=tuple(verbs), api_groups=(group,), resources=tuple(resources))


def on(kind: KindInfo, *verbs: str, subresource: str = "") -> PolicyRule:
    """A rule on one kind (or its ``subresource``), addressed as the client addresses it."""
    resource = f"{kind.plural}/{subresource}" if subresource else kind.plural
    return rule(kind.group, (resource,), verbs)


def cached(*kinds: KindInfo) -> tuple[PolicyRule, ...]:
    """What an informer on each kind needs: list, then watch from the list's version."""
    return tuple(on(kind, "list", "watch") for kind in kinds)


class Permissions(msgspec.Struct, frozen=True):
    """A controller's needs: ``cluster`` rules go into the manager's ClusterRole (its objects
    live in any namespace, or none); ``own_namespace`` rules into the Role in the manager's
    namespace (the leader-election Lease)."""

    cluster: tuple[PolicyRule, ...] = ()
    own_namespace: tuple[PolicyRule, ...] = ()

    def __add__(self, other: Permissions) -> Permissions:
        return Permissions(self.cluster + other.cluster, self.own_namespace + other.own_namespace)


def compact(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """Merge ``rules`` into the fewest rules granting exactly the same, deterministically."""
    verbs: dict[tuple[str, str], set[str]] = defaultdict(set)
    named: dict[tuple[str, str, tuple[str, ...]], set[str]] = defaultdict(set)
    urls: dict[str, set[str]] = defaultdict(set)
    for r in rules:
        for url in r.non_resource_urls:
            urls[url].update(r.verbs)
        for group in r.api_groups:
            for resource in r.resources:
                if r.resource_names:
                    named[group, resource, tuple(sorted(r.resource_names))].update(r.verbs)
                else:
                    verbs[group, resource].update(r.verbs)
    if any("*" in v for v in verbs.values()):
        # a wildcard verb covers the others; keep it alone so the rule says what it grants
        verbs = {k: ({"*"} if "*" in v else v) for k, v in verbs.items()}
    by_verbs: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, resource), vs in verbs.items():
        by_verbs[group, tuple(sorted(vs))].append(resource)
    out = [
        PolicyRule(verbs=vs, api_groups=(group,), resources=tuple(sorted(resources)))
        for (group, vs), resources in by_verbs.items()
    ]
    for (group, resource, names), vs in named.items():
        # A named rule the unnamed ones already cover is redundant.
        remaining = vs - verbs.get((group, resource), set())
        if remaining:
            out.append(
                PolicyRule(
                    verbs=tuple(sorted(remaining)),
                    api_groups=(group,),
                    resources=(resource,),
                    resource_names=names,
                )
            )
    out.sort(key=lambda r: (r.api_groups, r.resources, r.resource_names, r.verbs))
    by_url_verbs: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for url, vs in urls.items():
        by_url_verbs[tuple(sorted(vs))].append(url)
    out += sorted(
        (
            PolicyRule(verbs=vs, non_resource_urls=tuple(sorted(us)))
            for vs, us in by_url_verbs.items()
        ),
        key=lambda r: r.non_resource_urls,
    )
    return out


def roles(permissions: Iterable[Permissions], namespace: str = DEFAULT_NAMESPACE) -> RolePair:
    """The ClusterRole and the namespaced Role granting ``permissions``, merged; a rule of the
    Role the ClusterRole grants anyway is dropped, since the Role would never be what allows it
    (the apiserver visits ClusterRoleBindings first)."""
    total = Permissions()
    for p in permissions:
        total = total + p
    cluster = compact(total.cluster)
    granted = {atom for r in cluster for atom in r.atoms()}
    local = compact(
        PolicyRule(verbs=(verb,), api_groups=(group,), resources=(resource,))
        for r in compact(total.own_namespace)
        for group, resource, verb in sorted(r.atoms())
        if (group, resource, verb) not in granted
    )
    return RolePair(cluster, local, namespace)


class RolePair(msgspec.Struct, frozen=True):
    """The manager's generated RBAC: a ClusterRole for what every controller needs across the
    cluster and a Role for what it needs only in its own namespace (its Lease)."""

    cluster: list[PolicyRule]
    own_namespace: list[PolicyRule]
    namespace: str

    def cluster_role(self) -> dict[str, Any]:
        """The ClusterRole ``kubetrio-manager-role`` as a manifest."""
        return {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": {"name": MANAGER_ROLE},
            "rules": [r.to_dict() for r in self.cluster],
        }

    def role(self) -> dict[str, Any]:
        """The Role ``kubetrio-leader-election-role`` (what the manager needs in its own
        namespace: its Lease) as a manifest."""
        return {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": {"name": LEADER_ELECTION_ROLE, "namespace": self.namespace},
            "rules": [r.to_dict() for r in self.own_namespace],
        }


def role_rules(document: dict[str, Any]) -> list[PolicyRule]:
    """The rules of a Role or ClusterRole document (as ``kubectl`` or a YAML file gives it)."""
    return msgspec.convert(document.get("rules") or [], list[PolicyRule])
