"""RBAC's escalation check: a user may only write a Role/ClusterRole whose rules it already
holds (or with the ``escalate`` verb on it), and only bind a role whose rules it holds (or with
``bind`` on it), so RBAC write access never yields more than the writer has. system:masters is
exempt. Rules are compared atom by atom (one verb, group, resource, name), as the apiserver's
policy comparator does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kubetrio.emulator.auth.attributes import Attributes
from kubetrio.emulator.auth.rbac import GROUP, RbacAuthorizer
from kubetrio.emulator.auth.users import UserInfo
from kubetrio.emulator.errors import ApiError

Authorize = Callable[[Attributes], tuple[bool, str]]
_ROLE_KINDS = {"roles": "Role", "clusterroles": "ClusterRole"}
_BINDING_KINDS = ("rolebindings", "clusterrolebindings")


def _strs(rule: dict[str, Any], key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _atoms(rule: dict[str, Any]) -> Iterator[dict[str, list[str]]]:
    """The rule split into single-verb, single-group, single-resource, single-name rules, in
    the apiserver's order (so the refusal lists verbs as the role does)."""
    verbs = _strs(rule, "verbs")
    for group in _strs(rule, "apiGroups"):
        for resource in _strs(rule, "resources"):
            for name in _strs(rule, "resourceNames") or [""]:
                for verb in verbs:
                    atom = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                    if name:
                        atom["resourceNames"] = [name]
                    yield atom
    for url in _strs(rule, "nonResourceURLs"):
        for verb in verbs:
            yield {"nonResourceURLs": [url], "verbs": [verb]}


def _compact(atoms: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """Atoms of one group, resource and name merged into one rule of their verbs."""
    merged: dict[tuple[str, ...], dict[str, list[str]]] = {}
    out: list[dict[str, list[str]]] = []
    for atom in atoms:
        if "nonResourceURLs" in atom:
            out.append(atom)
            continue
        key = (atom["apiGroups"][0], atom["resources"][0], *atom.get("resourceNames", []))
        if key in merged:
            if atom["verbs"][0] not in merged[key]["verbs"]:
                merged[key]["verbs"].append(atom["verbs"][0])
        else:
            merged[key] = {k: list(v) for k, v in atom.items()}
    return out + list(merged.values())


def _resource_covered(owned: list[str], want: str) -> bool:
    if "*" in owned or want in owned:
        return True
    _, sep, sub = want.partition("/")
    return bool(sep) and f"*/{sub}" in owned


def _url_covered(owned: list[str], want: str) -> bool:
    return any(o in ("*", want) or (o.endswith("*") and want.startswith(o[:-1])) for o in owned)


def covers(owner: dict[str, Any], atom: dict[str, list[str]]) -> bool:
    verbs = _strs(owner, "verbs")
    if "*" not in verbs and atom["verbs"][0] not in verbs:
        return False
    if "nonResourceURLs" in atom:
        return _url_covered(_strs(owner, "nonResourceURLs"), atom["nonResourceURLs"][0])
    groups = _strs(owner, "apiGroups")
    if "*" not in groups and atom["apiGroups"][0] not in groups:
        return False
    if not _resource_covered(_strs(owner, "resources"), atom["resources"][0]):
        return False
    names = _strs(owner, "resourceNames")
    return not names or atom.get("resourceNames", [""])[0] in names


def _describe(atom: dict[str, list[str]]) -> str:
    """A rule as the apiserver's CompactString prints it."""

    def q(values: list[str]) -> str:
        return "[" + " ".join(f'"{v}"' for v in values) + "]"

    if "nonResourceURLs" in atom:
        return f"{{NonResourceURLs:{q(atom['nonResourceURLs'])}, Verbs:{q(atom['verbs'])}}}"
    parts = [f"APIGroups:{q(atom['apiGroups'])}", f"Resources:{q(atom['resources'])}"]
    if "resourceNames" in atom:
        parts.append(f"ResourceNames:{q(atom['resourceNames'])}")
    parts.append(f"Verbs:{q(atom['verbs'])}")
    return "{" + ", ".join(parts) + "}"


class EscalationCheck:
    def __init__(self, rbac: RbacAuthorizer, authorize: Authorize) -> None:
        self.rbac = rbac
        self.authorize = authorize

    def check(self, user: UserInfo, plural: str, namespace: str, obj: Any) -> None:
        """Raises 403 when writing ``obj`` (a role or binding) would grant ``user`` more than
        it holds; anything else passes (validation is the store's job)."""
        if not isinstance(obj, dict):
            return
        name = str((obj.get("metadata") or {}).get("name", ""))
        if plural in _ROLE_KINDS:
            if self._may(user, "escalate", plural, namespace, name):
                return
            rules = obj.get("rules")
            wanted = [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []
        elif plural in _BINDING_KINDS:
            ref = obj.get("roleRef")
            if not isinstance(ref, dict):
                return
            kind = ref.get("kind")
            role_plural = "clusterroles" if kind == "ClusterRole" else "roles"
            role_ns = "" if plural == "clusterrolebindings" else namespace
            if self._may(user, "bind", role_plural, role_ns, str(ref.get("name", ""))):
                return
            wanted, error = self.rbac.role_rules(ref, namespace)
            if error is not None:
                raise ApiError(404, "NotFound", error, {})
        else:
            return
        held = self.rbac.rules_for(user, namespace)
        missing = [
            atom
            for rule in wanted
            for atom in _atoms(rule)
            if not any(covers(owner, atom) for owner in held)
        ]
        if missing:
            groups = " ".join(f'"{g}"' for g in user.groups)
            why = (
                f'user "{user.name}" (groups=[{groups}]) is attempting to grant RBAC permissions '
                "not currently held:\n"
                + "\n".join(sorted({_describe(a) for a in _compact(missing)}))
            )
            head = f'{plural}.{GROUP} "{name}"' if name else f"{plural}.{GROUP}"
            raise ApiError(
                403,
                "Forbidden",
                f"{head} is forbidden: {why}",
                {"name": name, "group": GROUP, "kind": plural}
                if name
                else {"group": GROUP, "kind": plural},
            )

    def _may(self, user: UserInfo, verb: str, plural: str, namespace: str, name: str) -> bool:
        a = Attributes(
            user, verb, True, group=GROUP, resource=plural, namespace=namespace, name=name
        )
        return self.authorize(a)[0]
