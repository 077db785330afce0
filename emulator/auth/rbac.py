"""The RBAC authorizer: ClusterRoleBindings, then the RoleBindings of the request's namespace,
each granting its role's rules to matching subjects. Rules only ever allow; there is no deny,
so the first allowing rule decides. Aggregated ClusterRoles are not computed: a role's own
``rules`` are all it grants."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.auth.attributes import Attributes
from kubetrio.emulator.auth.users import UserInfo
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store

GROUP = "rbac.authorization.k8s.io"


def _strings(rule: dict[str, Any], key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _verb_matches(rule: dict[str, Any], verb: str) -> bool:
    return any(v in ("*", verb) for v in _strings(rule, "verbs"))


def _resource_matches(rule: dict[str, Any], resource: str, sub: str) -> bool:
    combined = f"{resource}/{sub}" if sub else resource
    return any(
        r in ("*", combined) or (bool(sub) and r == f"*/{sub}") for r in _strings(rule, "resources")
    )


def _name_matches(rule: dict[str, Any], name: str) -> bool:
    names = _strings(rule, "resourceNames")
    return not names or name in names


def _url_matches(rule: dict[str, Any], path: str) -> bool:
    return any(
        url in ("*", path) or (url.endswith("*") and path.startswith(url[:-1]))
        for url in _strings(rule, "nonResourceURLs")
    )


def rule_allows(rule: dict[str, Any], a: Attributes) -> bool:
    if not _verb_matches(rule, a.verb):
        return False
    if not a.resource_request:
        return _url_matches(rule, a.path)
    return (
        any(g in ("*", a.group) for g in _strings(rule, "apiGroups"))
        and _resource_matches(rule, a.resource, a.subresource)
        and _name_matches(rule, a.name)
    )


def _describe_subject(subject: dict[str, Any], binding_ns: str) -> str:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_ns}"'
    return f'{kind} "{name}"'


def _applies(subject: Any, user: UserInfo, binding_ns: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return bool(ns) and user.name == f"system:serviceaccount:{ns}:{name}"
    return False


@dataclass(frozen=True, slots=True)
class Grant:
    """The rules one binding gives the user, how the apiserver names that in reasons, and the
    role they come from (``Role/<namespace>/<name>`` or ``ClusterRole/<name>``)."""

    rules: list[dict[str, Any]]
    source: str
    role: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization's outcome; ``rule`` names the rule that allowed it as
    ``<role>#<index in its rules>`` ("" when none did, or no rule was needed)."""

    allowed: bool
    reason: str
    rule: str = ""


@dataclass(frozen=True, slots=True)
class RbacTypes:
    roles: ResourceType
    role_bindings: ResourceType
    cluster_roles: ResourceType
    cluster_role_bindings: ResourceType


class RbacAuthorizer:
    def __init__(self, store: Store, types: RbacTypes) -> None:
        self.store = store
        self.t = types

    def role_rules(self, ref: Any, binding_ns: str) -> tuple[list[dict[str, Any]], str | None]:
        """The referenced role's rules, or the error text the apiserver gives for a dangling
        reference."""
        if not isinstance(ref, dict):
            return [], None
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            entry = self.store.find(self.t.cluster_roles, "", name)
            missing = f'clusterrole.{GROUP} "{name}" not found'
        elif kind == "Role" and binding_ns:
            entry = self.store.find(self.t.roles, binding_ns, name)
            missing = f'role.{GROUP} "{name}" not found'
        else:
            return [], None
        if entry is None:
            return [], missing
        rules = entry.obj.get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else [], None

    def grants(self, user: UserInfo, namespace: str, errors: list[str]) -> Iterator[Grant]:
        """Every binding that applies to ``user`` in ``namespace`` ("" = cluster scope only),
        ClusterRoleBindings first, as the apiserver visits them."""
        for entry in self.store.iter(self.t.cluster_role_bindings):
            yield from self._grant(entry.obj, user, "", errors)
        if namespace:
            for entry in self.store.iter(self.t.role_bindings, namespace):
                yield from self._grant(entry.obj, user, namespace, errors)

    def _grant(
        self, binding: dict[str, Any], user: UserInfo, ns: str, errors: list[str]
    ) -> Iterator[Grant]:
        subjects = binding.get("subjects")
        if not isinstance(subjects, list):
            return
        subject = next((s for s in subjects if _applies(s, user, ns)), None)
        if subject is None:
            return
        ref = binding.get("roleRef")
        if not isinstance(ref, dict):
            return
        rules, error = self.role_rules(ref, ns)
        if error is not None:
            errors.append(error)
            return
        name = binding["metadata"]["name"]
        kind = "ClusterRoleBinding" if not ns else "RoleBinding"
        label = f'"{name}"' if not ns else f'"{name}/{ns}"'
        source = (
            f'{kind} {label} of {ref.get("kind")} "{ref.get("name")}" to '
            f"{_describe_subject(subject, ns)}"
        )
        role_kind = ref.get("kind")
        role = (
            f"{role_kind}/{ns}/{ref.get('name')}"
            if role_kind == "Role"
            else f"{role_kind}/{ref.get('name')}"
        )
        yield Grant(rules, source, role)

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        """(allowed, reason) with the apiserver's wording: which binding allowed it, or the
        dangling role references met on the way to "no"."""
        decision = self.decide(a)
        return decision.allowed, decision.reason

    def decide(self, a: Attributes) -> Decision:
        """As ``authorize``, naming the first rule that allows (the apiserver stops there too,
        so the rule named is the one that made the difference in visiting order)."""
        errors: list[str] = []
        for grant in self.grants(a.user, a.namespace, errors):
            for index, rule in enumerate(grant.rules):
                if rule_allows(rule, a):
                    return Decision(
                        True, f"RBAC: allowed by {grant.source}", f"{grant.role}#{index}"
                    )
        if errors:
            detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
            return Decision(False, f"RBAC: {detail}")
        return Decision(False, "")

    def rules_for(self, user: UserInfo, namespace: str) -> list[dict[str, Any]]:
        """Every rule that applies to ``user`` in ``namespace`` (SelfSubjectRulesReview)."""
        return [r for g in self.grants(user, namespace, []) for r in g.rules]
