"""Which webhooks a request reaches: rules (operations, groups, versions, resources with
subresources, scope), ``matchPolicy`` and the namespace and object selectors, as kube-apiserver's
webhook predicates decide."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.eviction import selector_matches
from kubetrio.emulator.kinds import ResourceType


@dataclass(frozen=True, slots=True)
class Attributes:
    """One admission request, as the webhooks are asked about it."""

    rt: ResourceType
    version: str  # the version the request was made in
    operation: str  # CREATE, UPDATE, DELETE
    namespace: str
    name: str
    sub: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool


def _any(values: Any, want: str) -> bool:
    return isinstance(values, list) and ("*" in values or want in values)


def _resource(resources: Any, plural: str, sub: str) -> bool:
    for res in resources if isinstance(resources, list) else []:
        r, _, s = str(res).partition("/")
        if r in ("*", plural) and s in ("*", sub):
            return True
    return False


def _scope(scope: Any, namespaced: bool) -> bool:
    return scope in (None, "*") or (scope == "Namespaced") == namespaced


def rule_matches(rule: Any, a: Attributes, version: str) -> bool:
    if not isinstance(rule, dict):
        return False
    return (
        _any(rule.get("operations"), a.operation)
        and _any(rule.get("apiGroups"), a.rt.group)
        and _any(rule.get("apiVersions"), version)
        and _resource(rule.get("resources"), a.rt.plural, a.sub)
        and _scope(rule.get("scope"), a.rt.namespaced)
    )


def matched_version(hook: dict[str, Any], a: Attributes) -> str | None:
    """The version the webhook is asked in: the request's when a rule names it, else (with
    ``matchPolicy: Equivalent``) another served version of the same resource; None: no match."""
    rules = hook.get("rules") or []
    candidates = [a.version]
    if hook.get("matchPolicy", "Equivalent") == "Equivalent":
        candidates += [v for v in a.rt.versions if v != a.version]
    for version in candidates:
        if any(rule_matches(r, a, version) for r in rules):
            return version
    return None


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def object_selected(hook: dict[str, Any], a: Attributes) -> bool:
    """The object selector matches the new or the old object's labels."""
    selector = hook.get("objectSelector") or {}
    objs = [o for o in (a.obj, a.old) if o is not None]
    return any(selector_matches(selector, _labels(o)) for o in objs)


def namespace_selected(hook: dict[str, Any], a: Attributes, ns_labels: dict[str, str]) -> bool:
    """Namespaced objects by their namespace's labels, namespaces by their own; other
    cluster-scoped objects are never filtered out by it."""
    selector = hook.get("namespaceSelector") or {}
    if a.rt.key == "namespaces":
        return object_selected({"objectSelector": selector}, a)
    if not a.rt.namespaced:
        return True
    return selector_matches(selector, ns_labels)
