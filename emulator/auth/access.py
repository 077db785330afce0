"""The one gate every Kubernetes API request passes, in the apiserver's filter order:
authenticate (bearer token, else anonymous), impersonate (itself authorized), authorize
(system:masters, then RBAC unless it is switched off). In-process cluster behaviours write to
the store directly and never come through here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubetrio.emulator import errors
from kubetrio.emulator.auth.attributes import Attributes, request_attributes
from kubetrio.emulator.auth.authn import Authenticator
from kubetrio.emulator.auth.bootstrap import DefaultServiceAccounts, bootstrap_policy
from kubetrio.emulator.auth.escalation import EscalationCheck
from kubetrio.emulator.auth.rbac import GROUP, Decision, RbacAuthorizer, RbacTypes
from kubetrio.emulator.auth.reviews import (
    VIRTUAL_TYPES,
    Reviews,
    impersonated_user,
    is_master,
)
from kubetrio.emulator.auth.tokens import TokenError, TokenIssuer, load_or_create_key
from kubetrio.emulator.auth.users import (
    ADMIN,
    ANONYMOUS_USER,
    UserInfo,
    split_service_account,
)
from kubetrio.emulator.clock import EmuClock
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.http import Request
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store

if TYPE_CHECKING:
    from kubetrio.emulator.audit import AuditRecord

_VIRTUAL_KEYS = frozenset(rt.key for rt in VIRTUAL_TYPES)

# The audit annotations kube-apiserver's authorization filter adds to every request it judges
# (k8s.io/apiserver endpoints/filters/authorization.go), and ours naming the deciding rule, so
# an audit log can prove which rules of a role were ever needed.
DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"
RULE_ANNOTATION = "emulator.kubetrio.io/rbac-rule"
ALLOW, FORBID = "allow", "forbid"


def forbidden(a: Attributes, reason: str = "") -> ApiError:
    """403 worded as responsewriters.Forbidden words it (kubectl prints it verbatim)."""
    who = a.user.name
    if not a.resource_request:
        msg = f'User "{who}" cannot {a.verb} path "{a.path}"'
    else:
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
        msg = f'User "{who}" cannot {a.verb} resource "{resource}" in API group "{a.group}" {where}'
    if reason:
        msg = f"{msg}: {reason}"
    details: dict[str, Any] = {}
    if a.resource_request and a.resource:
        qualified = f"{a.resource}.{a.group}" if a.group else a.resource
        head = f'{qualified} "{a.name}"' if a.name else qualified
        msg = f"{head} is forbidden: {msg}"
        if a.name:
            details["name"] = a.name
        if a.group:
            details["group"] = a.group
        details["kind"] = a.resource
    else:
        msg = f"forbidden: {msg}"
    return ApiError(403, "Forbidden", msg, details)


def _rt(store: Store, group: str, plural: str) -> ResourceType:
    rt = store.types.lookup(group, "v1", plural)
    assert rt is not None, f"{plural} is a built-in kind"
    return rt


class Access:
    def __init__(
        self,
        store: Store,
        clock: EmuClock,
        admin_token: str,
        *,
        rbac: bool = True,
        key_path: Path | None = None,
    ) -> None:
        self.store = store
        self.rbac_enabled = rbac
        for rt in VIRTUAL_TYPES:
            store.types.add(rt)
        rbac_g = "rbac.authorization.k8s.io"
        types = RbacTypes(
            roles=_rt(store, rbac_g, "roles"),
            role_bindings=_rt(store, rbac_g, "rolebindings"),
            cluster_roles=_rt(store, rbac_g, "clusterroles"),
            cluster_role_bindings=_rt(store, rbac_g, "clusterrolebindings"),
        )
        self.service_accounts = _rt(store, "", "serviceaccounts")
        self.issuer = TokenIssuer(lambda: load_or_create_key(key_path))
        self.authn = Authenticator(store, clock, self.issuer, {admin_token: ADMIN})
        self.rbac = RbacAuthorizer(store, types)
        self.escalation = EscalationCheck(self.rbac, self.authorize)
        self.reviews = Reviews(
            store, self.authn, self.rbac, self.authorize, lambda: self.rbac_enabled
        )
        bootstrap_policy(store, types.cluster_roles, types.cluster_role_bindings)
        DefaultServiceAccounts(store, _rt(store, "", "namespaces"), self.service_accounts).start()

    # -- the filter chain

    def admit(self, req: Request, audit: AuditRecord | None = None) -> UserInfo:
        """The user the request acts as, once it may do what it asks; raises 401/403.
        ``audit`` (the request's audit event) hears who asked and the decision as soon as
        they are known, so a refused request is recorded with both."""
        user = self._authenticate(req)
        if audit is not None:
            audit.user = user
        user = self._impersonate(req, user)
        if audit is not None:
            audit.user = user
        a: Attributes | None = None
        # The common case (every in-tree client) skips parsing the URL; the apiserver's
        # privileged-group and always-allow authorizers give no reason either.
        decision = Decision(True, "")
        if not is_master(user) and self.rbac_enabled:
            a = request_attributes(req, user)
            decision = self.rbac.decide(a)
        if audit is not None:
            audit.annotations[DECISION_ANNOTATION] = ALLOW if decision.allowed else FORBID
            audit.annotations[REASON_ANNOTATION] = decision.reason
            if decision.rule:
                audit.annotations[RULE_ANNOTATION] = decision.rule
        if a is not None and not decision.allowed:
            raise forbidden(a, decision.reason)
        return user

    def _authenticate(self, req: Request) -> UserInfo:
        scheme, _, token = req.header("authorization").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return ANONYMOUS_USER
        try:
            return self.authn.authenticate(token).user
        except TokenError:
            raise errors.unauthorized() from None

    def _impersonate(self, req: Request, actor: UserInfo) -> UserInfo:
        if not any(k.startswith("impersonate-") for k in req.headers):
            return actor
        name = req.header("impersonate-user")
        groups = [g.strip() for g in req.header("impersonate-group").split(",") if g.strip()]
        uid = req.header("impersonate-uid")
        extras = {k: v for k, v in req.headers.items() if k.startswith("impersonate-extra-")}
        if not name:
            if groups or uid or extras:
                raise errors.bad_request(
                    "requested impersonation of groups, uid or extra without impersonating a user"
                )
            return actor
        sa = split_service_account(name)
        checks = [
            Attributes(
                actor, "impersonate", True, resource="serviceaccounts", namespace=sa[0], name=sa[1]
            )
            if sa
            else Attributes(actor, "impersonate", True, resource="users", name=name)
        ]
        checks += [
            Attributes(actor, "impersonate", True, resource="groups", name=g) for g in groups
        ]
        if uid:
            checks.append(
                Attributes(
                    actor,
                    "impersonate",
                    True,
                    group="authentication.k8s.io",
                    resource="uids",
                    name=uid,
                )
            )
        extra: dict[str, list[str]] = {}
        for header, value in extras.items():
            key = header[len("impersonate-extra-") :]
            values = [v.strip() for v in value.split(",")]
            extra[key] = values
            checks += [
                Attributes(
                    actor,
                    "impersonate",
                    True,
                    group="authentication.k8s.io",
                    resource="userextras",
                    subresource=key,
                    name=v,
                )
                for v in values
            ]
        for check in checks:
            allowed, reason = self.authorize(check)
            if not allowed:
                raise forbidden(check, reason)
        user = impersonated_user(name, groups, uid)
        if extra:
            user = UserInfo(user.name, user.groups, user.uid, extra)
        return user

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        if is_master(a.user) or not self.rbac_enabled:
            return True, ""
        return self.rbac.authorize(a)

    def check_write(self, rt: ResourceType, namespace: str, user: UserInfo, obj: Any) -> None:
        """RBAC's escalation check on the object a write of a role or binding would store
        (create, replace, patch or apply alike: the check sees the result, never the request
        shape)."""
        if rt.group != GROUP or not self.rbac_enabled or is_master(user):
            return
        self.escalation.check(user, rt.plural, namespace, obj)

    def require(
        self, user: UserInfo, verb: str, rt: ResourceType, namespace: str, name: str
    ) -> None:
        """403 unless ``user`` may ``verb`` the object: for requests that need a second verb
        (an apply that creates needs ``create`` besides ``patch``)."""
        a = Attributes(
            user, verb, True, group=rt.group, resource=rt.plural, namespace=namespace, name=name
        )
        allowed, reason = self.authorize(a)
        if not allowed:
            raise forbidden(a, reason)

    # -- the endpoints that answer from here rather than from the store

    def serves(self, rt: ResourceType, sub: str) -> bool:
        return rt.key in _VIRTUAL_KEYS or (rt is self.service_accounts and sub == "token")

    def serve(
        self,
        method: str,
        rt: ResourceType,
        namespace: str,
        name: str,
        user: UserInfo,
        body: Callable[[], Any],
    ) -> dict[str, Any]:
        """The answer (201) to a review or TokenRequest; ``body`` decodes the request body."""
        if method != "POST" or (rt.key in _VIRTUAL_KEYS and name):
            raise errors.method_not_allowed()
        if rt.key in _VIRTUAL_KEYS:
            return self.reviews.handle(rt, namespace, body(), user)  # type: ignore[no-any-return]
        return self.reviews.token_request(rt, namespace, name, body())
