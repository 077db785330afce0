"""RBAC rules (``pkg/apis/rbac/validation``): policy rules name verbs and either resources or
non-resource URLs; bindings refer to a Role or ClusterRole, once and for all, and name each
subject."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubetrio.emulator.validation import labelselector, names, objectmeta
from kubetrio.emulator.validation.causes import Causes, GoValue

Obj = dict[str, Any]
CreateRules = Callable[[Obj, Causes], None]
UpdateRules = Callable[[Obj, Obj, Causes], None]

GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]


def _rules(obj: Obj, namespaced: bool, causes: Causes) -> None:
    for i, rule in enumerate(obj.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        at = f"rules[{i}]"
        if not rule.get("verbs"):
            causes.required(f"{at}.verbs", "verbs must contain at least one value")
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                causes.invalid(
                    f"{at}.nonResourceURLs",
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.invalid(
                    f"{at}.nonResourceURLs",
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            continue
        if not rule.get("apiGroups"):
            causes.required(f"{at}.apiGroups", "resource rules must supply at least one api group")
        if not rule.get("resources"):
            causes.required(f"{at}.resources", "resource rules must supply at least one resource")


def role(obj: Obj, causes: Causes) -> None:
    _rules(obj, True, causes)


def cluster_role(obj: Obj, causes: Causes) -> None:
    _rules(obj, False, causes)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        for i, selector in enumerate(aggregation.get("clusterRoleSelectors") or []):
            labelselector.validate(selector, f"aggregationRule.clusterRoleSelectors[{i}]", causes)


def _binding(obj: Obj, namespaced: bool, causes: Causes) -> None:
    ref = obj.get("roleRef") or {}
    if not isinstance(ref, dict):
        ref = {}
    if ref.get("apiGroup", "") != GROUP:
        causes.unsupported("roleRef.apiGroup", ref.get("apiGroup", ""), [GROUP])
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind", "") not in kinds:
        causes.unsupported("roleRef.kind", ref.get("kind", ""), kinds)
    name = ref.get("name") or ""
    if not name:
        causes.required("roleRef.name")
    else:
        causes.extend("roleRef.name", name, names.path_segment(name))
    for i, subject in enumerate(obj.get("subjects") or []):
        if isinstance(subject, dict):
            _subject(subject, namespaced, f"subjects[{i}]", causes)


def _subject(subject: Obj, namespaced: bool, at: str, causes: Causes) -> None:
    name = subject.get("name") or ""
    if not name:
        causes.required(f"{at}.name")
    kind, group = subject.get("kind") or "", subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if name:
            causes.extend(f"{at}.name", name, names.dns_subdomain(name))
        if group:
            causes.unsupported(f"{at}.apiGroup", group, [""])
        if not namespaced and not subject.get("namespace"):
            causes.required(f"{at}.namespace")
    elif kind in ("User", "Group"):
        if group != GROUP:
            causes.unsupported(f"{at}.apiGroup", group, [GROUP])
    else:
        causes.unsupported(f"{at}.kind", kind, SUBJECT_KINDS)


def role_binding(obj: Obj, causes: Causes) -> None:
    _binding(obj, True, causes)


def cluster_role_binding(obj: Obj, causes: Causes) -> None:
    _binding(obj, False, causes)


def _ref_frozen(new: Obj, old: Obj, causes: Causes) -> None:
    ref, old_ref = new.get("roleRef") or {}, old.get("roleRef") or {}
    if ref != old_ref:
        shown = {"APIGroup": ref.get("apiGroup", ""), "Kind": ref.get("kind", "")}
        shown["Name"] = ref.get("name", "")
        causes.invalid(
            "roleRef", GoValue(json.dumps(shown, separators=(",", ":"))), "cannot change roleRef"
        )


def _revalidate(create: CreateRules) -> UpdateRules:
    def update(new: Obj, old: Obj, causes: Causes) -> None:
        objectmeta.fields(new.get("metadata") or {}, causes)
        create(new, causes)

    return update


def _binding_update(create: CreateRules) -> UpdateRules:
    def update(new: Obj, old: Obj, causes: Causes) -> None:
        objectmeta.fields(new.get("metadata") or {}, causes)
        create(new, causes)
        _ref_frozen(new, old, causes)

    return update


RULES = {
    f"roles.{GROUP}": (role, _revalidate(role), None),
    f"clusterroles.{GROUP}": (cluster_role, _revalidate(cluster_role), None),
    f"rolebindings.{GROUP}": (role_binding, _binding_update(role_binding), None),
    f"clusterrolebindings.{GROUP}": (
        cluster_role_binding,
        _binding_update(cluster_role_binding),
        None,
    ),
}
