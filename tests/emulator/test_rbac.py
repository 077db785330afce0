"""Authentication and RBAC over HTTP: ServiceAccount tokens, the RBAC authorizer's decisions
and the apiserver's Forbidden wording, impersonation, the review APIs, and RBAC switched off."""

from __future__ import annotations

from pathlib import Path

import pykube
import pytest
import trio
import trio.testing

from kubetrio.api.core import Node, Pod
from kubetrio.emulator import Emulator, EmulatorOptions
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.errors import ApiError, is_forbidden
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from tests.helpers.kube import blocking
from tests.helpers.rbac import bind, ok, role, rule, sa_subject, service_account, token

SA_USER = "system:serviceaccount:default:bot"
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    }


async def bot(client: EmuClient, emu: Emulator) -> EmuClient:
    await service_account(client, "bot")
    return EmuClient(emu.url, await token(client, "bot"))


async def test_service_account_token_forbidden_then_allowed_by_a_role_binding(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "bot")
    kube = Client.from_url(emu.url, token=await token(client, "bot"))
    with pytest.raises(ApiError) as denied:
        await kube.list(Pod, namespace="default")
    assert is_forbidden(denied.value)
    assert denied.value.message == (
        f'pods is forbidden: User "{SA_USER}" cannot list resource "pods" in API group "" '
        'in the namespace "default"'
    )
    await role(client, "pod-reader", [rule(["get", "list", "watch"], ["pods"])])
    await bind(client, "bot-reads", "Role", "pod-reader", [sa_subject("bot")])
    assert (await kube.list(Pod, namespace="default")).items == []
    # Only in that namespace, and nothing cluster-wide.
    with pytest.raises(ApiError) as other_ns:
        await kube.list(Pod, namespace="kube-system")
    assert 'in the namespace "kube-system"' in other_ns.value.message
    with pytest.raises(ApiError) as nodes:
        await kube.list(Node)
    assert nodes.value.message == (
        f'nodes is forbidden: User "{SA_USER}" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )
    # A ClusterRoleBinding grants cluster-wide: nodes, and pods in every namespace.
    await role(client, "reader", [rule(["list"], ["nodes", "pods"])], ns=None)
    await bind(client, "bot-reads-all", "ClusterRole", "reader", [sa_subject("bot")], ns=None)
    assert (await kube.list(Node)).items == []
    assert (await kube.list(Pod, namespace="kube-system")).items == []


async def test_watch_is_its_own_verb(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    sa = await bot(client, emu)
    await role(client, "lister", [rule(["list"], ["pods"])])
    await bind(client, "bot-lists", "Role", "lister", [sa_subject("bot")])
    assert (await sa.get(PODS)).status == 200
    async with sa.watch(f"{PODS}?watch=1") as events:
        assert await events.next() is None
        assert events.status == 403
    reply = await sa.get("/api/v1/watch/namespaces/default/pods")
    assert reply.json()["message"] == (
        f'pods is forbidden: User "{SA_USER}" cannot watch resource "pods" in API group "" '
        'in the namespace "default"'
    )
    # Our client's watch ends with the refusal as its ERROR event.
    kube = Client.from_url(emu.url, token=sa.token)
    send, receive = trio.open_memory_channel[list[object]](10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: kube.watch(Pod, send, namespace="default"))  # type: ignore[arg-type]
        batch = await receive.receive()
    assert batch[-1].type == "ERROR"  # type: ignore[attr-defined]
    await role(client, "watcher", [rule(["watch"], ["pods"])])
    await bind(client, "bot-watches", "Role", "watcher", [sa_subject("bot")])
    await client.request("POST", PODS, pod("p1"))
    async with sa.watch(f"{PODS}?watch=1&resourceVersion=0") as events:
        event = await events.next()
        assert events.status == 200 and event is not None
        assert event["object"]["metadata"]["name"] == "p1"


async def test_pykube_with_a_service_account_token(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "bot")
    config = pykube.KubeConfig(
        {
            "clusters": [{"name": "c", "cluster": {"server": emu.url}}],
            "users": [{"name": "bot", "user": {"token": await token(client, "bot")}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "bot"}}],
            "current-context": "x",
        }
    )
    api = pykube.HTTPClient(config)

    def create() -> None:
        pykube.Pod(
            api, {**pod("from-pykube"), "metadata": {"name": "from-pykube", "namespace": "default"}}
        ).create()

    with pytest.raises(pykube.exceptions.HTTPError) as denied:
        await blocking(create)
    assert denied.value.code == 403
    assert 'cannot create resource "pods"' in str(denied.value)
    await role(client, "maker", [rule(["create"], ["pods"])])
    await bind(client, "bot-makes", "Role", "maker", [sa_subject("bot")])
    await blocking(create)
    assert emu.get("v1", "Pod", "from-pykube") is not None


async def test_rule_details_subresources_names_and_deletecollection(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    sa = await bot(client, emu)
    await client.request("POST", PODS, pod("a"))
    await client.request("POST", PODS, pod("b"))
    await role(
        client,
        "narrow",
        [
            rule(["get"], ["pods"], resourceNames=["a"]),
            rule(["get"], ["*/status"]),
            rule(["create"], ["pods/eviction"]),
        ],
    )
    await bind(client, "bot-narrow", "Role", "narrow", [sa_subject("bot")])
    assert (await sa.get(f"{PODS}/a")).status == 200
    denied = (await sa.get(f"{PODS}/b")).json()
    assert denied["message"] == (
        f'pods "b" is forbidden: User "{SA_USER}" cannot get resource "pods" in API group "" '
        'in the namespace "default"'
    )
    assert denied["details"] == {"name": "b", "kind": "pods"}
    # resourceNames never cover a list (it names no object) ...
    assert (await sa.get(PODS)).status == 403
    # ... unless the list asks for that one name by field selector, as kubectl get NAME -w does.
    assert (await sa.get(f"{PODS}?fieldSelector=metadata.name%3Da")).status == 403  # no list verb
    assert (await sa.get(f"{PODS}/b/status")).status == 200  # */status
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a"}}
    assert (await sa.request("POST", f"{PODS}/a/eviction", eviction)).status == 201
    reply = await sa.request("DELETE", PODS)
    assert reply.json()["message"] == (
        f'pods is forbidden: User "{SA_USER}" cannot deletecollection resource "pods" in API '
        'group "" in the namespace "default"'
    )
    reply = await sa.request("PUT", f"{PODS}/b/status", pod("b"))
    assert reply.json()["message"].startswith(
        f'pods "b" is forbidden: User "{SA_USER}" cannot update resource "pods/status"'
    )
    # Authorization comes before routing: an unknown resource is refused, not "not found".
    assert (await sa.get("/apis/example.com/v1/widgets")).json()["message"] == (
        f'widgets.example.com is forbidden: User "{SA_USER}" cannot list resource "widgets" '
        'in API group "example.com" at the cluster scope'
    )


async def test_a_binding_to_a_missing_role_is_named_in_the_refusal(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    sa = await bot(client, emu)
    await bind(client, "dangling", "Role", "nowhere", [sa_subject("bot")])
    message = (await sa.get(PODS)).json()["message"]
    assert message.endswith(': RBAC: role.rbac.authorization.k8s.io "nowhere" not found')


async def test_anonymous_and_authenticated_discovery(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    anonymous = EmuClient(emu.url)
    assert (await anonymous.get("/version")).status == 200
    assert (await anonymous.get("/healthz")).status == 200
    denied = await anonymous.get("/api")
    assert denied.status == 403
    assert denied.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/api"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    sa = await bot(client, emu)
    assert (await sa.get("/api")).status == 200
    assert (await sa.get("/apis/authorization.k8s.io/v1")).status == 200
    assert (await sa.get("/metrics")).status == 403  # not in system:discovery
    bad = await EmuClient(emu.url, "not-a-token").get("/version")
    assert bad.status == 401 and bad.json()["reason"] == "Unauthorized"


async def test_token_expiry_deletion_and_audience(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "bot")
    await role(client, "r", [rule(["list"], ["pods"])])
    await bind(client, "rb", "Role", "r", [sa_subject("bot")])
    sa = EmuClient(emu.url, await token(client, "bot", seconds=600))
    assert (await sa.get(PODS)).status == 200
    mock_clock.jump(599)
    assert (await sa.get(PODS)).status == 200
    mock_clock.jump(2)
    expired = await sa.get(PODS)
    assert expired.status == 401 and expired.json()["message"] == "Unauthorized"
    # Another audience is not for the API server.
    other = EmuClient(emu.url, await token(client, "bot", audiences=["vault"]))
    assert (await other.get(PODS)).status == 401
    # A token dies with its ServiceAccount, even when one of that name comes back.
    fresh = EmuClient(emu.url, await token(client, "bot"))
    assert (await fresh.get(PODS)).status == 200
    await client.request("DELETE", "/api/v1/namespaces/default/serviceaccounts/bot")
    assert (await fresh.get(PODS)).status == 401
    await service_account(client, "bot")
    assert (await fresh.get(PODS)).status == 401


async def test_token_request_validation_and_pod_binding(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    path = "/api/v1/namespaces/default/serviceaccounts/{}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    missing = await client.request("POST", path.format("ghost"), body)
    assert missing.status == 404
    assert missing.json()["message"] == 'serviceaccounts "ghost" not found'
    await service_account(client, "bot")
    short = {**body, "spec": {"expirationSeconds": 60}}
    invalid = (await client.request("POST", path.format("bot"), short)).json()
    assert invalid["code"] == 422
    assert invalid["details"]["causes"][0]["field"] == "spec.expirationSeconds"
    answer = await ok(client.request("POST", path.format("bot"), body), 201)
    assert answer["spec"]["expirationSeconds"] == 3600
    assert answer["spec"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    assert (await client.get(path.format("bot"))).status == 405
    created = await ok(client.request("POST", PODS, pod("holder")))
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "holder", "uid": created["metadata"]["uid"]}
    bound = await token(client, "bot", bound=ref)
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": bound},
    }
    status = (
        await ok(client.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review))
    )["status"]
    assert status["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["holder"]
    await client.request("DELETE", f"{PODS}/holder?gracePeriodSeconds=0")
    assert (await EmuClient(emu.url, bound).get("/api")).status == 401


async def test_token_review(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    account = await service_account(client, "bot")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    url = "/apis/authentication.k8s.io/v1/tokenreviews"
    good = {**review, "spec": {"token": await token(client, "bot")}}
    answer = await ok(client.request("POST", url, good), 201)
    assert answer["status"]["authenticated"] is True
    user = answer["status"]["user"]
    assert user["username"] == SA_USER
    assert user["uid"] == account["metadata"]["uid"]
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert answer["status"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    bad = await ok(client.request("POST", url, {**review, "spec": {"token": "x.y.z"}}), 201)
    assert "authenticated" not in bad["status"] and bad["status"]["error"]
    empty = await client.request("POST", url, {**review, "spec": {}})
    assert empty.status == 400
    # Not stored, not listable.
    assert (await client.get(url)).status == 405
    sa = EmuClient(emu.url, await token(client, "bot"))
    refused = (await sa.request("POST", url, good)).json()
    assert refused["message"] == (
        f'tokenreviews.authentication.k8s.io is forbidden: User "{SA_USER}" cannot create '
        'resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope'
    )


async def test_subject_access_reviews(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "bot")
    await role(client, "r", [rule(["get"], ["pods"])])
    await bind(client, "rb", "Role", "r", [sa_subject("bot")])
    group = "/apis/authorization.k8s.io/v1"

    def review(kind: str, **spec: object) -> dict[str, object]:
        return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}

    attrs = {"namespace": "default", "verb": "get", "resource": "pods", "name": "x"}
    sar = review("SubjectAccessReview", user=SA_USER, resourceAttributes=attrs)
    status = (await ok(client.request("POST", f"{group}/subjectaccessreviews", sar), 201))["status"]
    assert status == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "rb/default" of Role "r" to ServiceAccount '
        '"bot/default"',
    }
    denied = review(
        "SubjectAccessReview", user=SA_USER, resourceAttributes={**attrs, "verb": "delete"}
    )
    status = (await ok(client.request("POST", f"{group}/subjectaccessreviews", denied), 201))[
        "status"
    ]
    assert status == {"allowed": False}
    masters = review(
        "SubjectAccessReview", user="x", groups=["system:masters"], resourceAttributes=attrs
    )
    assert (await ok(client.request("POST", f"{group}/subjectaccessreviews", masters)))["status"][
        "allowed"
    ]
    url = review(
        "SubjectAccessReview",
        user="x",
        groups=["system:authenticated"],
        nonResourceAttributes={"path": "/apis/apps", "verb": "get"},
    )
    status = (await ok(client.request("POST", f"{group}/subjectaccessreviews", url)))["status"]
    assert status["allowed"] and "system:discovery" in status["reason"]
    nobody = await client.request(
        "POST",
        f"{group}/subjectaccessreviews",
        review("SubjectAccessReview", resourceAttributes=attrs),
    )
    assert nobody.status == 422
    assert nobody.json()["details"]["causes"][0]["field"] == "spec.user"
    neither = await client.request(
        "POST", f"{group}/subjectaccessreviews", review("SubjectAccessReview", user="x")
    )
    assert neither.json()["details"]["causes"][0]["field"] == "spec.resourceAttributes"
    # Local: the namespace is the URL's.
    local = review(
        "LocalSubjectAccessReview",
        user=SA_USER,
        resourceAttributes={"verb": "get", "resource": "pods"},
    )
    answer = await ok(
        client.request("POST", f"{group}/namespaces/default/localsubjectaccessreviews", local), 201
    )
    assert answer["status"]["allowed"] is True
    assert answer["spec"]["resourceAttributes"]["namespace"] == "default"
    elsewhere = review(
        "LocalSubjectAccessReview",
        user=SA_USER,
        resourceAttributes={"verb": "get", "resource": "pods", "namespace": "other"},
    )
    assert (
        await client.request(
            "POST", f"{group}/namespaces/default/localsubjectaccessreviews", elsewhere
        )
    ).status == 400
    # Self: the caller's own permissions, whoever asks.
    sa = EmuClient(emu.url, await token(client, "bot"))
    ssar = review("SelfSubjectAccessReview", resourceAttributes=attrs)
    assert (await ok(sa.request("POST", f"{group}/selfsubjectaccessreviews", ssar), 201))["status"][
        "allowed"
    ]
    ssar = review("SelfSubjectAccessReview", resourceAttributes={**attrs, "verb": "list"})
    assert not (await ok(sa.request("POST", f"{group}/selfsubjectaccessreviews", ssar)))["status"][
        "allowed"
    ]
    # A ServiceAccount may not ask about others.
    assert (await sa.request("POST", f"{group}/subjectaccessreviews", sar)).status == 403
    rules = (
        await ok(
            sa.request(
                "POST",
                f"{group}/selfsubjectrulesreviews",
                review("SelfSubjectRulesReview", namespace="default"),
            )
        )
    )["status"]
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]} in rules["resourceRules"]
    assert rules["incomplete"] is False
    assert any("/api" in r["nonResourceURLs"] for r in rules["nonResourceRules"])


async def test_review_resources_are_create_only_in_discovery(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    authz = (await client.get("/apis/authorization.k8s.io/v1")).json()
    by_name = {r["name"]: r for r in authz["resources"]}
    assert set(by_name) == {
        "localsubjectaccessreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
    }
    assert all(r["verbs"] == ["create"] for r in by_name.values())
    assert by_name["localsubjectaccessreviews"]["namespaced"] is True
    authn = (await client.get("/apis/authentication.k8s.io/v1")).json()
    assert sorted(r["name"] for r in authn["resources"]) == ["selfsubjectreviews", "tokenreviews"]
    core = (await client.get("/api/v1")).json()
    token_sub = next(r for r in core["resources"] if r["name"] == "serviceaccounts/token")
    assert token_sub["kind"] == "TokenRequest" and token_sub["verbs"] == ["create"]
    assert (await client.get("/apis/authorization.k8s.io/v1/subjectaccessreviews")).status == 405


async def test_impersonation(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    sa = await bot(client, emu)
    as_bot = {"Impersonate-User": SA_USER}
    reply = await client.request("GET", PODS, headers=as_bot)
    assert reply.status == 403 and f'User "{SA_USER}"' in reply.json()["message"]
    whoami = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    url = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    info = (await ok(client.request("POST", url, whoami, headers=as_bot), 201))["status"][
        "userInfo"
    ]
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    as_group = {"Impersonate-User": "alice", "Impersonate-Group": "devs,system:masters"}
    info = (await ok(client.request("POST", url, whoami, headers=as_group)))["status"]["userInfo"]
    assert info == {
        "username": "alice",
        "groups": ["devs", "system:masters", "system:authenticated"],
    }
    assert (await client.request("GET", "/api/v1/nodes", headers=as_group)).status == 200
    # Impersonating is itself authorized.
    refused = (await sa.request("GET", PODS, headers={"Impersonate-User": "alice"})).json()
    assert refused["message"] == (
        f'users "alice" is forbidden: User "{SA_USER}" cannot impersonate resource "users" in '
        'API group "" at the cluster scope'
    )
    await role(
        client, "impersonator", [rule(["impersonate"], ["users"], resourceNames=["alice"])], ns=None
    )
    await bind(
        client, "bot-impersonates", "ClusterRole", "impersonator", [sa_subject("bot")], ns=None
    )
    info = (await ok(sa.request("POST", url, whoami, headers={"Impersonate-User": "alice"})))[
        "status"
    ]["userInfo"]
    assert info["username"] == "alice"
    assert (await sa.request("GET", PODS, headers={"Impersonate-User": "bob"})).status == 403
    group_only = await client.request("GET", PODS, headers={"Impersonate-Group": "devs"})
    assert group_only.status == 400


async def test_default_service_account_in_every_namespace(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    for ns in ("default", "kube-system", "kube-public"):
        assert emu.get("v1", "ServiceAccount", "default", ns) is not None
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    await ok(client.request("POST", "/api/v1/namespaces", body))
    first = emu.get("v1", "ServiceAccount", "default", "team")
    assert first is not None
    await client.request("DELETE", "/api/v1/namespaces/team/serviceaccounts/default")
    second = emu.get("v1", "ServiceAccount", "default", "team")
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    # A deleted namespace goes away with its ServiceAccount, not held open by a recreated one.
    await client.request("DELETE", "/api/v1/namespaces/team")
    assert emu.get("v1", "Namespace", "team") is None
    assert emu.get("v1", "ServiceAccount", "default", "team") is None


async def test_bootstrap_policy_objects(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    roles = (await client.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")).json()
    names = {r["metadata"]["name"] for r in roles["items"]}
    assert {
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    } <= names
    bindings = (await client.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")).json()
    subjects = {
        b["metadata"]["name"]: [s["name"] for s in b["subjects"]] for b in bindings["items"]
    }
    assert subjects["cluster-admin"] == ["system:masters"]
    assert subjects["system:public-info-viewer"] == [
        "system:authenticated",
        "system:unauthenticated",
    ]
    # The bootstrap roles work as bound: view in a namespace reads, but not secrets.
    sa = await bot(client, emu)
    await bind(client, "bot-views", "ClusterRole", "view", [sa_subject("bot")])
    assert (await sa.get(PODS)).status == 200
    assert (await sa.get("/api/v1/namespaces/default/secrets")).status == 403


async def test_rbac_off_allows_everyone_but_still_checks_tokens(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_world(options=EmulatorOptions(rbac=False)) as emu:
        admin = EmuClient(emu.url, emu.token)
        sa = await bot(admin, emu)
        assert (await sa.get("/api/v1/nodes")).status == 200
        assert (await sa.request("POST", PODS, pod("p"))).status == 201
        assert (await EmuClient(emu.url).get("/api/v1/nodes")).status == 200
        assert (await EmuClient(emu.url, "forged").get("/api/v1/nodes")).status == 401
        sar = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}},
        }
        url = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        assert (await ok(sa.request("POST", url, sar)))["status"]["allowed"] is True


async def test_signing_key_is_kept_with_the_state(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    state = tmp_path / "state.json"
    async with serve_world(state=state, token="admin") as emu:
        admin = EmuClient(emu.url, "admin")
        await service_account(admin, "bot")
        issued = await token(admin, "bot")
    async with serve_world(state=state, token="admin") as emu:
        assert (await EmuClient(emu.url, issued).get("/api")).status == 200
    async with serve_world(token="admin") as emu:  # another cluster: another key
        assert (await EmuClient(emu.url, issued).get("/api")).status == 401


async def test_the_kubeconfig_speaks_tls_with_the_admin_token(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    kube = Client.from_kubeconfig(str(emu.kubeconfig_path))
    assert kube.base_url.startswith("https://")
    assert (await kube.list(Node)).items == []


async def test_rbac_writes_cannot_escalate(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    sa = await bot(client, emu)
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    await role(
        client,
        "rbac-writer",
        [
            rule(["create", "update"], ["roles", "rolebindings"], ["rbac.authorization.k8s.io"]),
            rule(["get", "list"], ["pods"]),
        ],
    )
    await bind(client, "bot-writes-rbac", "Role", "rbac-writer", [sa_subject("bot")])

    def role_doc(name: str, *rules: dict[str, object]) -> dict[str, object]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name},
            "rules": list(rules),
        }

    # What it holds it may hand on; more it may not.
    held = role_doc("reads", rule(["get"], ["pods"]))
    assert (await sa.request("POST", f"{rbac}/roles", held)).status == 201
    more = role_doc("deletes", rule(["get", "delete"], ["pods", "secrets"], resourceNames=["x"]))
    refused = (await sa.request("POST", f"{rbac}/roles", more)).json()
    assert refused["code"] == 403
    assert refused["message"] == (
        'roles.rbac.authorization.k8s.io "deletes" is forbidden: user '
        '"system:serviceaccount:default:bot" (groups=["system:serviceaccounts" '
        '"system:serviceaccounts:default" "system:authenticated"]) is attempting to grant RBAC '
        "permissions not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["x"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["x"], Verbs:["get" "delete"]}'
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [sa_subject("bot")],
    }
    assert (await sa.request("POST", f"{rbac}/rolebindings", binding)).status == 403
    binding["roleRef"]["name"] = "reads"  # type: ignore[index]
    binding["roleRef"]["kind"] = "Role"  # type: ignore[index]
    assert (await sa.request("POST", f"{rbac}/rolebindings", binding)).status == 201
    # The escalate and bind verbs lift the check.
    await role(
        client,
        "escalator",
        [rule(["escalate", "bind"], ["roles", "clusterroles"], ["rbac.authorization.k8s.io"])],
    )
    await bind(client, "bot-escalates", "Role", "escalator", [sa_subject("bot")])
    assert (await sa.request("POST", f"{rbac}/roles", more)).status == 201
    binding["metadata"] = {"name": "b2"}
    binding["roleRef"] = {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "edit",
    }
    assert (await sa.request("POST", f"{rbac}/rolebindings", binding)).status == 201
