"""Authentication and authorization: reviews of oneself, a ServiceAccount's token (made with a
TokenRequest) and what it may not do, RBAC grants, anonymous and bad tokens."""

from __future__ import annotations

from typing import Any

from ..runner import Poll, probe
from .objects import (
    ACCOUNTS,
    CMS,
    DEPLOYMENTS,
    NODES,
    PODS,
    ROLEBINDINGS,
    ROLES,
    cm,
    deployment,
    get,
    post,
    setup,
)

TOKEN = (
    setup(post(ACCOUNTS, {"metadata": {"name": "robot"}})),
    post(
        f"{ACCOUNTS}/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        capture={"tok": "status.token"},
        compare=False,
    ),
)
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"


def ssar(
    verb: str, resource: str, namespace: str = "$ns", group: str = "", **extra: Any
) -> dict[str, Any]:
    attrs = {"verb": verb, "resource": resource, "group": group, **extra}
    if namespace:
        attrs["namespace"] = namespace
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }


REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "reader"},
    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
}
BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "robot-reads"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
    "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "$ns"}],
}
GRANT = (setup(post(ROLES, ROLE)), setup(post(ROLEBINDINGS, BINDING)))

# kube-apiserver's RBAC authorizer reads Roles and RoleBindings from its own cache, a moment
# behind the create: a request right after a grant may still be refused, as any client that
# grants and then acts meets. The probes ask again until the grant shows.


def _allowed(answer: dict[str, Any]) -> bool:
    return bool((answer["body"].get("status") or {}).get("allowed"))


def _not_forbidden(answer: dict[str, Any]) -> bool:
    return bool(answer["code"] != 403)


def _escalation_judged(answer: dict[str, Any]) -> bool:
    """Refused for what the role grants, not (yet) for creating roles at all."""
    return "attempting to grant" in str(answer["body"].get("message", ""))


def _pods_ruled(answer: dict[str, Any]) -> bool:
    rules = (answer["body"].get("status") or {}).get("resourceRules") or []
    return any("pods" in (rule.get("resources") or []) for rule in rules)


PROBES = [
    probe("auth.self-subject-review-admin", post(SSR, REVIEW)),
    probe("auth.access-review-admin", post(SSAR, ssar("create", "pods"))),
    probe("auth.access-review-empty", post(SSAR, {**ssar("get", "pods"), "spec": {}})),
    probe("auth.self-subject-review-service-account", *TOKEN, post(SSR, REVIEW, user="tok")),
    probe("auth.service-account-cannot-list-pods", *TOKEN, get(PODS, user="tok")),
    probe(
        "auth.service-account-cannot-get-configmap",
        *TOKEN,
        setup(post(CMS, cm("c"))),
        get(f"{CMS}/c", user="tok"),
    ),
    probe("auth.service-account-cannot-list-nodes", *TOKEN, get(NODES, user="tok")),
    probe(
        "auth.service-account-cannot-create-deployment",
        *TOKEN,
        post(DEPLOYMENTS, deployment("d"), user="tok"),
    ),
    probe(
        "auth.service-account-cannot-get-namespace",
        *TOKEN,
        get("/api/v1/namespaces/$ns", user="tok"),
    ),
    probe("auth.service-account-cannot-watch", *TOKEN, get(f"{CMS}?watch=1", user="tok")),
    probe("auth.service-account-cannot-get-status", *TOKEN, get(f"{PODS}/p/status", user="tok")),
    probe(
        "auth.service-account-access-review-denied",
        *TOKEN,
        post(SSAR, ssar("list", "pods"), user="tok"),
    ),
    probe(
        "auth.service-account-access-review-allowed",
        *TOKEN,
        *GRANT,
        Poll(post(SSAR, ssar("list", "pods"), user="tok"), until=_allowed),
    ),
    probe(
        "auth.service-account-granted-list",
        *TOKEN,
        *GRANT,
        Poll(get(PODS, user="tok", view=lambda b: b.get("kind")), until=_not_forbidden),
    ),
    probe(
        "auth.service-account-discovery",
        *TOKEN,
        get("/api", user="tok", view=lambda b: b.get("versions")),
    ),
    probe(
        "auth.service-account-version",
        *TOKEN,
        get("/version", user="tok", view=lambda b: sorted(b)),
    ),
    probe(
        "auth.service-account-rules-review",
        *TOKEN,
        *GRANT,
        Poll(
            post(
                SSRR,
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectRulesReview",
                    "spec": {"namespace": "$ns"},
                },
                user="tok",
                view=lambda b: sorted(
                    (
                        tuple(r.get("apiGroups") or []),
                        tuple(r.get("resources") or []),
                        tuple(sorted(r.get("verbs") or [])),
                    )
                    for r in (b.get("status") or {}).get("resourceRules") or []
                    if "pods" in (r.get("resources") or [])
                ),
            ),
            until=_pods_ruled,
        ),
    ),
    probe("auth.anonymous", get("/api/v1/namespaces", user="")),
    probe(
        "auth.anonymous-version",
        get("/version", user="", view=lambda b: sorted(b) if isinstance(b, dict) else b),
    ),
    probe("auth.bad-token", setup(post(CMS, cm("c"))), get(CMS, user="bogus")),
    probe(
        "auth.escalation-refused",
        *TOKEN,
        setup(
            post(
                ROLES,
                {
                    **ROLE,
                    "metadata": {"name": "role-admin"},
                    "rules": [
                        {
                            "apiGroups": ["rbac.authorization.k8s.io"],
                            "resources": ["roles"],
                            "verbs": ["create"],
                        }
                    ],
                },
            )
        ),
        setup(
            post(ROLEBINDINGS, {**BINDING, "roleRef": {**BINDING["roleRef"], "name": "role-admin"}})
        ),
        Poll(
            post(
                ROLES,
                {
                    **ROLE,
                    "metadata": {"name": "too-much"},
                    "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
                },
                user="tok",
            ),
            until=_escalation_judged,
        ),
    ),
]
