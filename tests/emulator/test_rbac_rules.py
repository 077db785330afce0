"""RBAC rule matching and request attributes, as pure logic (the HTTP path is in
tests/emulator/test_rbac.py)."""

from __future__ import annotations

import pytest

from kubetrio.emulator.auth.access import forbidden
from kubetrio.emulator.auth.attributes import Attributes, request_attributes
from kubetrio.emulator.auth.escalation import covers
from kubetrio.emulator.auth.rbac import rule_allows
from kubetrio.emulator.auth.reviews import impersonated_user
from kubetrio.emulator.auth.users import UserInfo, split_service_account
from kubetrio.emulator.http import Request

U = UserInfo("u", ("system:authenticated",))


def attrs(verb: str, resource: str, sub: str = "", name: str = "", group: str = "") -> Attributes:
    return Attributes(U, verb, True, group=group, resource=resource, subresource=sub, name=name)


def req(method: str, path: str, **query: str) -> Attributes:
    return request_attributes(Request(method, path, query, {}, b""), U)


@pytest.mark.parametrize(
    ("rule", "a", "allowed"),
    [
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, attrs("get", "pods"), True),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            attrs("list", "pods"),
            False,
        ),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, attrs("patch", "x", "y"), True),
        (
            {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]},
            attrs("get", "pods"),
            False,
        ),
        # A subresource is its own resource: pods does not cover pods/status ...
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            attrs("get", "pods", "status"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]},
            attrs("get", "pods", "status"),
            True,
        ),
        # ... and */status covers every resource's status, but not the resources.
        (
            {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
            attrs("get", "nodes", "status"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
            attrs("get", "nodes"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]},
            attrs("get", "pods", "log"),
            False,
        ),
        # resourceNames: only requests that name one of them.
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
            attrs("get", "pods", name="a"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
            attrs("get", "pods", name="b"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
            attrs("list", "pods"),
            False,
        ),
        # A resource rule never matches a path, and a path rule never matches a resource.
        ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, attrs("get", "healthz"), False),
        (
            {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
            Attributes(U, "get", False, path="/apis/apps/v1"),
            True,
        ),
        (
            {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
            Attributes(U, "get", False, path="/apis"),
            False,
        ),
        ({"nonResourceURLs": ["*"], "verbs": ["*"]}, Attributes(U, "post", False, path="/x"), True),
        (
            {"apiGroups": [""], "resources": ["*"], "verbs": ["*"]},
            Attributes(U, "get", False, path="/api"),
            False,
        ),
        # Malformed rules (stored as any object is) grant nothing rather than fail.
        ({"apiGroups": "", "resources": None, "verbs": [1]}, attrs("get", "pods"), False),
    ],
)
def test_rule_allows(rule: dict[str, object], a: Attributes, allowed: bool) -> None:
    assert rule_allows(rule, a) is allowed


def test_request_attributes_like_request_info() -> None:
    a = req("GET", "/api/v1/namespaces/default/pods")
    assert (a.verb, a.resource, a.namespace, a.name, a.group) == ("list", "pods", "default", "", "")
    assert req("GET", "/api/v1/namespaces/default/pods", watch="true").verb == "watch"
    a = req("GET", "/api/v1/watch/namespaces/default/pods/p")
    assert (a.verb, a.name) == ("watch", "p")
    assert req("DELETE", "/apis/apps/v1/namespaces/ns/deployments").verb == "deletecollection"
    a = req("POST", "/api/v1/namespaces/default/pods/p/eviction")
    assert (a.verb, a.resource, a.subresource, a.name) == ("create", "pods", "eviction", "p")
    # A namespace is its own namespace; its status/finalize are subresources.
    a = req("GET", "/api/v1/namespaces/team")
    assert (a.resource, a.name, a.namespace) == ("namespaces", "team", "team")
    a = req("PUT", "/api/v1/namespaces/team/finalize")
    assert (a.resource, a.subresource, a.namespace) == ("namespaces", "finalize", "team")
    # A list for one name by field selector is authorized as that name.
    assert req("GET", "/api/v1/pods", fieldSelector="metadata.name==x").name == "x"
    assert req("GET", "/api/v1/pods", fieldSelector="metadata.name!=x").name == ""
    for path in ("/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version", "/"):
        a = req("GET", path)
        assert not a.resource_request and a.verb == "get" and a.path == path
    assert req("POST", "/healthz").verb == "post"


def test_forbidden_wording() -> None:
    cluster = forbidden(attrs("list", "nodes"))
    assert cluster.message == (
        'nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the '
        "cluster scope"
    )
    named = forbidden(
        Attributes(
            U,
            "update",
            True,
            group="apps",
            resource="deployments",
            subresource="scale",
            namespace="ns",
            name="d",
        )
    )
    assert named.message == (
        'deployments.apps "d" is forbidden: User "u" cannot update resource "deployments/scale" '
        'in API group "apps" in the namespace "ns"'
    )
    assert named.details == {"name": "d", "group": "apps", "kind": "deployments"}
    assert forbidden(Attributes(U, "get", False, path="/x"), "RBAC: why").message == (
        'forbidden: User "u" cannot get path "/x": RBAC: why'
    )


def test_impersonated_groups() -> None:
    sa = impersonated_user("system:serviceaccount:ns:bot", [], "")
    assert sa.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )
    assert impersonated_user("alice", ["devs"], "").groups == ("devs", "system:authenticated")
    assert impersonated_user("system:anonymous", [], "").groups == ()
    assert impersonated_user("x", ["system:unauthenticated"], "").groups == (
        "system:unauthenticated",
    )
    assert split_service_account("system:serviceaccount:ns:a:b") is None
    assert split_service_account("system:serviceaccount:ns:a") == ("ns", "a")


@pytest.mark.parametrize(
    ("owner", "atom", "covered"),
    [
        (
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            ("apps", "deployments", "", "get"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
            ("", "pods/status", "", "get"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
            ("", "pods", "", "get"),
            False,
        ),
        # Owning a name covers only that name; owning all names covers any.
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
            ("", "pods", "a", "get"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
            ("", "pods", "", "get"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            ("", "pods", "b", "get"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            ("", "pods", "", "list"),
            False,
        ),
    ],
)
def test_escalation_coverage(
    owner: dict[str, object], atom: tuple[str, str, str, str], covered: bool
) -> None:
    group, resource, name, verb = atom
    want = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
    if name:
        want["resourceNames"] = [name]
    assert covers(owner, want) is covered


def test_escalation_coverage_of_paths() -> None:
    owner = {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}
    assert covers(owner, {"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]})
    assert not covers(owner, {"nonResourceURLs": ["/api"], "verbs": ["get"]})
