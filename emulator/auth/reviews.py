"""The create-only virtual resources of authentication.k8s.io and authorization.k8s.io
(TokenReview, SelfSubjectReview, SubjectAccessReview and its Local/Self forms,
SelfSubjectRulesReview) and the ServiceAccount ``token`` subresource (TokenRequest). Nothing
here is stored: each request is answered from the credentials and the RBAC objects of the
moment, with the request echoed back and ``status`` filled in."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.auth.attributes import Attributes
from kubetrio.emulator.auth.authn import Authenticator
from kubetrio.emulator.auth.rbac import RbacAuthorizer
from kubetrio.emulator.auth.tokens import API_AUDIENCES, BoundObject, TokenError
from kubetrio.emulator.auth.users import (
    AUTHENTICATED,
    MASTERS,
    UserInfo,
    service_account_groups,
    split_service_account,
)
from kubetrio.emulator.clock import rfc3339
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.meta import check_type_meta, sub_object
from kubetrio.emulator.store import Store

AUTHN = "authentication.k8s.io"
AUTHZ = "authorization.k8s.io"
_MIN_EXPIRATION = 600
_MAX_EXPIRATION = 1 << 32
_DEFAULT_EXPIRATION = 3600


def _virtual(group: str, kind: str, plural: str, namespaced: bool = False) -> ResourceType:
    return ResourceType(group, ("v1",), kind, plural, kind.lower(), namespaced, verbs=("create",))


VIRTUAL_TYPES: tuple[ResourceType, ...] = (
    _virtual(AUTHN, "TokenReview", "tokenreviews"),
    _virtual(AUTHN, "SelfSubjectReview", "selfsubjectreviews"),
    _virtual(AUTHZ, "SubjectAccessReview", "subjectaccessreviews"),
    _virtual(AUTHZ, "LocalSubjectAccessReview", "localsubjectaccessreviews", True),
    _virtual(AUTHZ, "SelfSubjectAccessReview", "selfsubjectaccessreviews"),
    _virtual(AUTHZ, "SelfSubjectRulesReview", "selfsubjectrulesreviews"),
)

Authorize = Callable[[Attributes], tuple[bool, str]]


def decode(obj: Any, group: str, kind: str) -> dict[str, Any]:
    return check_type_meta(obj, (f"{group}/v1",), kind)


def _str(spec: dict[str, Any], key: str, path: str) -> str:
    value = spec.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise errors.bad_request(f"{path}.{key}: Invalid value: must be a string")
    return value


def _str_list(spec: dict[str, Any], key: str, path: str) -> list[str]:
    value = spec.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise errors.bad_request(f"{path}.{key}: Invalid value: must be a list of strings")
    return value


def _extra(spec: dict[str, Any]) -> dict[str, list[str]]:
    extra = sub_object(spec, "extra", "spec.extra")
    for k, v in extra.items():
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise errors.bad_request(f"spec.extra[{k}]: Invalid value: must be a list of strings")
    return extra


def _answer(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    md = dict(md or {})
    md.setdefault("creationTimestamp", None)
    out = {"kind": obj["kind"], "apiVersion": obj["apiVersion"], "metadata": md}
    out["spec"] = obj.get("spec") or {}
    out["status"] = status
    return out


class Reviews:
    def __init__(
        self,
        store: Store,
        authn: Authenticator,
        rbac: RbacAuthorizer,
        authorize: Authorize,
        rbac_enabled: Callable[[], bool],
    ) -> None:
        self.store = store
        self.authn = authn
        self.rbac = rbac
        self.authorize = authorize
        self.rbac_enabled = rbac_enabled

    def handle(self, rt: ResourceType, namespace: str, body: Any, user: UserInfo) -> Any:
        obj = decode(body, rt.group, rt.kind)
        spec = sub_object(obj, "spec", "spec")
        if rt.plural == "tokenreviews":
            return _answer(obj, self._token_review(spec))
        if rt.plural == "selfsubjectreviews":
            return _answer(obj, {"userInfo": user.to_json()})
        if rt.plural == "selfsubjectrulesreviews":
            return _answer(obj, self._rules_review(spec, user))
        if rt.plural == "subjectaccessreviews":
            subject = self._subject(rt.kind, spec)
            return _answer(obj, self._access(rt.kind, spec, subject, ""))
        if rt.plural == "localsubjectaccessreviews":
            subject = self._subject(rt.kind, spec)
            return _answer(obj, self._access(rt.kind, spec, subject, namespace))
        return _answer(obj, self._access(rt.kind, spec, user, ""))

    # -- authentication.k8s.io

    def _token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        token = _str(spec, "token", "spec")
        if not token:
            raise errors.bad_request("token is required for TokenReview in authentication")
        wanted = tuple(_str_list(spec, "audiences", "spec")) or API_AUDIENCES
        try:
            result = self.authn.authenticate(token, wanted)
        except TokenError as exc:
            return {"user": {}, "error": f"[invalid bearer token, {exc}]"}
        return {
            "authenticated": True,
            "user": result.user.to_json(),
            "audiences": list(result.audiences),
        }

    # -- authorization.k8s.io

    def _subject(self, kind: str, spec: dict[str, Any]) -> UserInfo:
        user = _str(spec, "user", "spec")
        groups = _str_list(spec, "groups", "spec")
        if not user and not groups:
            raise errors.invalid(
                AUTHZ,
                kind,
                "",
                [
                    (
                        "FieldValueInvalid",
                        "spec.user",
                        'Invalid value: "": at least one of user or group must be specified',
                    )
                ],
            )
        return UserInfo(user, tuple(groups), _str(spec, "uid", "spec"), _extra(spec))

    def _access(
        self, kind: str, spec: dict[str, Any], user: UserInfo, namespace: str
    ) -> dict[str, Any]:
        res = spec.get("resourceAttributes")
        non = spec.get("nonResourceAttributes")
        if (res is None) == (non is None):
            field, message = (
                (
                    "spec.nonResourceAttributes",
                    "cannot be specified in combination with resourceAttributes",
                )
                if res is not None
                else (
                    "spec.resourceAttributes",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )
            )
            raise errors.invalid(
                AUTHZ, kind, "", [("FieldValueInvalid", field, f"Invalid value: {message}")]
            )
        if res is not None:
            ra = sub_object(spec, "resourceAttributes", "spec.resourceAttributes")
            path = "spec.resourceAttributes"
            ns = _str(ra, "namespace", path)
            if namespace:
                if ns and ns != namespace:
                    raise errors.bad_request(
                        f"spec.resourceAttributes.namespace must match namespace: {namespace}"
                    )
                ns = namespace
                ra["namespace"] = ns
            a = Attributes(
                user,
                _str(ra, "verb", path),
                True,
                group=_str(ra, "group", path),
                version=_str(ra, "version", path),
                resource=_str(ra, "resource", path),
                subresource=_str(ra, "subresource", path),
                namespace=ns,
                name=_str(ra, "name", path),
            )
        else:
            na = sub_object(spec, "nonResourceAttributes", "spec.nonResourceAttributes")
            path = "spec.nonResourceAttributes"
            a = Attributes(user, _str(na, "verb", path), False, path=_str(na, "path", path))
        allowed, reason = self.authorize(a)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status

    def _rules_review(self, spec: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        namespace = _str(spec, "namespace", "spec")
        if not self.rbac_enabled():
            everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
            return {
                "resourceRules": [everything],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        for rule in self.rbac.rules_for(user, namespace):
            if rule.get("nonResourceURLs"):
                non_resource_rules.append(
                    {"verbs": rule.get("verbs", []), "nonResourceURLs": rule["nonResourceURLs"]}
                )
            else:
                out = {
                    "verbs": rule.get("verbs", []),
                    "apiGroups": rule.get("apiGroups", []),
                    "resources": rule.get("resources", []),
                }
                if rule.get("resourceNames"):
                    out["resourceNames"] = rule["resourceNames"]
                resource_rules.append(out)
        return {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": False,
        }

    # -- TokenRequest

    def token_request(
        self, sa_rt: ResourceType, namespace: str, name: str, body: Any
    ) -> dict[str, Any]:
        obj = decode(body, AUTHN, "TokenRequest")
        spec = sub_object(obj, "spec", "spec")
        sa = self.store.get(sa_rt, namespace, name)
        audiences = tuple(_str_list(spec, "audiences", "spec")) or API_AUDIENCES
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = _DEFAULT_EXPIRATION
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise errors.bad_request("spec.expirationSeconds: Invalid value: must be an integer")
        if seconds < _MIN_EXPIRATION or seconds > _MAX_EXPIRATION:
            limit = (
                "may not specify a duration less than 10 minutes"
                if seconds < _MIN_EXPIRATION
                else "may not specify a duration larger than 2^32 seconds"
            )
            raise errors.invalid(
                AUTHN,
                "TokenRequest",
                name,
                [
                    (
                        "FieldValueInvalid",
                        "spec.expirationSeconds",
                        f"Invalid value: {seconds}: {limit}",
                    )
                ],
            )
        bound = self._bound(spec, namespace)
        now = self.authn.now()
        token, claims = self.authn.issuer.issue(
            namespace, name, sa.obj["metadata"]["uid"], audiences, now, seconds, bound
        )
        out_spec: dict[str, Any] = {"audiences": list(audiences), "expirationSeconds": seconds}
        if bound is not None:
            out_spec["boundObjectRef"] = spec["boundObjectRef"]
        expires = dt.datetime.fromtimestamp(claims.expires, dt.UTC)
        return {
            "kind": "TokenRequest",
            "apiVersion": f"{AUTHN}/v1",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": rfc3339(dt.datetime.fromtimestamp(now, dt.UTC)),
            },
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": rfc3339(expires)},
        }

    def _bound(self, spec: dict[str, Any], namespace: str) -> BoundObject | None:
        ref = sub_object(spec, "boundObjectRef", "spec.boundObjectRef")
        if not ref:
            return None
        kind = _str(ref, "kind", "spec.boundObjectRef")
        name = _str(ref, "name", "spec.boundObjectRef")
        plural = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}.get(kind)
        if plural is None or _str(ref, "apiVersion", "spec.boundObjectRef") not in ("v1", ""):
            raise errors.bad_request(
                f'cannot bind token for serviceaccount to object of type "{kind}"; '
                "supported kinds: v1 Pod, v1 Secret, v1 Node"
            )
        rt = self.store.types.lookup("", "v1", plural)
        assert rt is not None
        obj = self.store.get(rt, "" if kind == "Node" else namespace, name)
        uid = obj.obj["metadata"]["uid"]
        want = _str(ref, "uid", "spec.boundObjectRef")
        if want and want != uid:
            raise errors.conflict(
                "",
                kind,
                name,
                f"the UID in the bound object reference ({want}) does not match the UID in "
                "record. The object might have been deleted and then recreated",
            )
        return BoundObject(kind, name, uid)


def impersonated_user(name: str, groups: list[str], uid: str) -> UserInfo:
    """The user an impersonation request becomes, with the groups the apiserver adds."""
    sa = split_service_account(name)
    if sa is not None and not groups:
        groups = list(service_account_groups(sa[0]))
    if name != "system:anonymous" and not any(
        g in (AUTHENTICATED, "system:unauthenticated") for g in groups
    ):
        groups = [*groups, AUTHENTICATED]
    return UserInfo(name, tuple(groups), uid)


def is_master(user: UserInfo) -> bool:
    return MASTERS in user.groups
