"""Who a request is: the authenticated (or impersonated) user the authorizer judges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SA_PREFIX = "system:serviceaccount:"
SA_GROUP = "system:serviceaccounts"
ADMIN_USER = "kubernetes-admin"


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As authentication.k8s.io UserInfo (TokenReview, SelfSubjectReview)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = self.extra
        return out


ADMIN = UserInfo(ADMIN_USER, (MASTERS, AUTHENTICATED))
ANONYMOUS_USER = UserInfo(ANONYMOUS, (UNAUTHENTICATED,))


def service_account_user(namespace: str, name: str) -> str:
    return f"{SA_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) when ``username`` names a ServiceAccount."""
    if not username.startswith(SA_PREFIX):
        return None
    ns, sep, name = username[len(SA_PREFIX) :].partition(":")
    if not sep or not ns or not name or ":" in name:
        return None
    return ns, name


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SA_GROUP, f"{SA_GROUP}:{namespace}")
