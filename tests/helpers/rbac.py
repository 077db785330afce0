"""Setting up ServiceAccounts, tokens and RBAC objects over HTTP as an admin would."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.testclient import EmuClient

RBAC = "rbac.authorization.k8s.io/v1"


async def ok(reply_coro: Any, *codes: int) -> Any:
    reply = await reply_coro
    assert reply.status in (codes or (200, 201)), (reply.status, reply.body)
    return reply.json()


async def service_account(admin: EmuClient, name: str, ns: str = "default") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    result: dict[str, Any] = await ok(
        admin.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body)
    )
    return result


async def token(
    admin: EmuClient,
    name: str,
    ns: str = "default",
    seconds: int | None = None,
    audiences: list[str] | None = None,
    bound: dict[str, str] | None = None,
) -> str:
    spec: dict[str, Any] = {}
    if seconds is not None:
        spec["expirationSeconds"] = seconds
    if audiences is not None:
        spec["audiences"] = audiences
    if bound is not None:
        spec["boundObjectRef"] = bound
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"
    answer = await ok(admin.request("POST", path, body), 201)
    return str(answer["status"]["token"])


def rule(
    verbs: list[str], resources: list[str], groups: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "apiGroups": groups if groups is not None else [""],
        "resources": resources,
        "verbs": verbs,
        **extra,
    }


async def role(
    admin: EmuClient, name: str, rules: list[dict[str, Any]], ns: str | None = "default"
) -> None:
    kind = "Role" if ns else "ClusterRole"
    path = f"/apis/{RBAC}/namespaces/{ns}/roles" if ns else f"/apis/{RBAC}/clusterroles"
    body = {"apiVersion": RBAC, "kind": kind, "metadata": {"name": name}, "rules": rules}
    await ok(admin.request("POST", path, body))


async def bind(
    admin: EmuClient,
    name: str,
    role_kind: str,
    role_name: str,
    subjects: list[dict[str, str]],
    ns: str | None = "default",
) -> None:
    kind = "RoleBinding" if ns else "ClusterRoleBinding"
    path = (
        f"/apis/{RBAC}/namespaces/{ns}/rolebindings" if ns else f"/apis/{RBAC}/clusterrolebindings"
    )
    body = {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }
    await ok(admin.request("POST", path, body))


def sa_subject(name: str, ns: str = "default") -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": ns}
