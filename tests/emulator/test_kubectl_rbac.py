"""kubectl against RBAC: ServiceAccounts and their tokens, the Forbidden message as kubectl
prints it, ``auth can-i`` (exit codes, --as, --list, subresources, cluster scope) and
``auth whoami``.

Since 1.32 kubectl's typed commands (create serviceaccount/role/rolebinding/token, auth can-i,
auth whoami) send protobuf bodies, so they run on 1.27 and 1.31 (JSON) and 1.33 (protobuf); 1.28
stands in for 1.27 where whoami is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrio.emulator import Emulator
from tests.helpers.kube import Kubectl, kubectl_of

pytestmark = pytest.mark.kubectl

SA_USER = "system:serviceaccount:default:bot"


def as_token(k: Kubectl, token: str, tmp_path: Path) -> Kubectl:
    """The same kubectl with a kubeconfig whose user is ``token``'s."""
    doc = yaml.safe_load(Path(k.env["KUBECONFIG"]).read_text())
    doc["users"][0]["user"] = {"token": token}
    path = tmp_path / f"kubeconfig-{abs(hash(token))}"
    path.write_text(yaml.safe_dump(doc))
    return Kubectl(k.binary, {**k.env, "KUBECONFIG": str(path)})


async def bot_token(k: Kubectl, *flags: str) -> str:
    await k.run("create", "serviceaccount", "bot")
    return (await k.out("create", "token", "bot", *flags)).strip()


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.27", "1.31", "1.33"])
async def test_create_token_then_forbidden_then_allowed(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    admin = kubectl_of(version, emu, tmp_path)
    token = await bot_token(admin, "--duration", "20m")
    assert token.count(".") == 2  # a JWT
    bot = as_token(admin, token, tmp_path)
    denied = await bot.run("get", "pods", check=False)
    assert denied.returncode == 1
    assert (
        denied.stderr.decode()
        .strip()
        .endswith(
            f'Error from server (Forbidden): pods is forbidden: User "{SA_USER}" cannot list '
            'resource "pods" in API group "" in the namespace "default"'
        )
    )
    await admin.run("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    await admin.run(
        "create", "rolebinding", "bot-reads", "--role=pod-reader", "--serviceaccount=default:bot"
    )
    allowed = await bot.run("get", "pods")
    assert "No resources found" in allowed.stderr.decode()
    nodes = await bot.run("get", "nodes", check=False)
    assert (
        f'nodes is forbidden: User "{SA_USER}" cannot list resource "nodes" in API group "" at '
        "the cluster scope"
    ) in nodes.stderr.decode()
    short = await admin.run("create", "token", "bot", "--duration", "1m", check=False)
    assert "may not specify a duration less than 10 minutes" in short.stderr.decode()
    missing = await admin.run("create", "token", "ghost", check=False)
    assert 'serviceaccounts "ghost" not found' in missing.stderr.decode()
    # A token for another audience does not log in to the API server.
    other = (await admin.out("create", "token", "bot", "--audience", "vault")).strip()
    refused = await as_token(admin, other, tmp_path).run("get", "pods", check=False)
    assert "You must be logged in to the server (Unauthorized)" in refused.stderr.decode()


@pytest.mark.parametrize("version", ["1.27", "1.33"])
async def test_forbidden_messages_as_kubectl_prints_them(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    from kubetrio.emulator.testclient import EmuClient
    from tests.helpers.rbac import bind, role, rule, sa_subject, service_account, token

    admin = EmuClient(emu.url, emu.token)
    await service_account(admin, "bot")
    k = kubectl_of(version, emu, tmp_path)
    bot = as_token(k, await token(admin, "bot"), tmp_path)
    await role(admin, "r", [rule(["get"], ["pods"], resourceNames=["mine"])])
    await bind(admin, "rb", "Role", "r", [sa_subject("bot")])
    one = await bot.run("get", "pod", "theirs", check=False)
    assert (
        f'Error from server (Forbidden): pods "theirs" is forbidden: User "{SA_USER}" cannot '
        'get resource "pods" in API group "" in the namespace "default"'
    ) in one.stderr.decode()
    mine = await bot.run("get", "pod", "mine", check=False)
    assert 'pods "mine" not found' in mine.stderr.decode()  # allowed, and then not there
    create = await bot.run("create", "deployment", "d", "--image=busybox", check=False)
    assert (
        f'deployments.apps is forbidden: User "{SA_USER}" cannot create resource "deployments" '
        'in API group "apps" in the namespace "default"'
    ) in create.stderr.decode()
    ns = await bot.run("get", "namespaces", check=False)
    assert "at the cluster scope" in ns.stderr.decode()
    await role(admin, "reader", [rule(["get", "list"], ["namespaces"])], ns=None)
    await bind(admin, "bot-reads", "ClusterRole", "reader", [sa_subject("bot")], ns=None)
    assert "kube-system" in await bot.out("get", "namespaces")
    # The admin's kubeconfig stays all-powerful.
    assert "bot" in await k.out("get", "serviceaccounts")


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.27", "1.31", "1.33"])
async def test_auth_can_i(version: str, emu: Emulator, tmp_path: Path) -> None:
    admin = kubectl_of(version, emu, tmp_path)
    token = await bot_token(admin)
    await admin.run("create", "role", "r", "--verb=get,list", "--resource=pods")
    await admin.run("create", "role", "evict", "--verb=create", "--resource=pods/eviction")
    await admin.run("create", "rolebinding", "rb", "--role=r", "--serviceaccount=default:bot")
    await admin.run("create", "rolebinding", "rb2", "--role=evict", "--serviceaccount=default:bot")

    async def can_i(k: Kubectl, *args: str) -> tuple[int, str]:
        proc = await k.run("auth", "can-i", *args, check=False)
        return proc.returncode, proc.stdout.decode().strip()

    bot = as_token(admin, token, tmp_path)
    assert await can_i(bot, "list", "pods") == (0, "yes")
    assert await can_i(bot, "delete", "pods") == (1, "no")
    assert await can_i(bot, "list", "pods", "-n", "kube-system") == (1, "no")
    assert await can_i(bot, "create", "pods", "--subresource=eviction") == (0, "yes")
    # TYPE/NAME: a pod named "eviction", which the subresource rule does not cover.
    assert await can_i(bot, "create", "pods/eviction") == (1, "no")
    assert await can_i(bot, "get", "pods", "--subresource=log") == (1, "no")
    assert await can_i(bot, "list", "nodes") == (1, "no")
    # The admin, as itself and as the ServiceAccount (impersonation).
    assert await can_i(admin, "delete", "nodes") == (0, "yes")
    assert await can_i(admin, "*", "*") == (0, "yes")
    assert await can_i(admin, "list", "pods", "--as", SA_USER) == (0, "yes")
    assert await can_i(admin, "delete", "pods", "--as", SA_USER) == (1, "no")
    assert await can_i(admin, "list", "nodes", "--as", "alice", "--as-group", "system:masters") == (
        0,
        "yes",
    )
    # The ServiceAccount may not impersonate.
    proc = await bot.run("auth", "can-i", "list", "pods", "--as", "alice", check=False)
    assert (
        f'users "alice" is forbidden: User "{SA_USER}" cannot impersonate resource "users" in '
        'API group "" at the cluster scope'
    ) in proc.stderr.decode()
    listing = await bot.out("auth", "can-i", "--list")
    rows = [line.split() for line in listing.splitlines()]
    assert ["pods", "[]", "[]", "[get", "list]"] in rows
    assert ["pods/eviction", "[]", "[]", "[create]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    elsewhere = await bot.out("auth", "can-i", "--list", "-n", "kube-system")
    assert "pods/eviction" not in elsewhere


@pytest.mark.parametrize("version", ["1.28", "1.31", "1.33"])
async def test_auth_whoami(version: str, emu: Emulator, tmp_path: Path) -> None:
    admin = kubectl_of(version, emu, tmp_path)
    me = await admin.json("auth", "whoami")
    assert me["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["system:masters", "system:authenticated"],
    }
    bot = as_token(admin, await bot_token(admin), tmp_path)
    table = await bot.out("auth", "whoami")
    assert ["Username", SA_USER] in [line.split() for line in table.splitlines()]
    info = (await bot.json("auth", "whoami"))["status"]["userInfo"]
    assert info["username"] == SA_USER
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert info["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    impersonated = await admin.json("auth", "whoami", "--as", SA_USER)
    assert impersonated["status"]["userInfo"]["username"] == SA_USER


async def test_kubectl_127_whoami_needs_an_api_a_133_server_no_longer_serves(
    emu: Emulator, tmp_path: Path
) -> None:
    """kubectl 1.27 asks for SelfSubjectReview v1beta1/v1alpha1, removed by 1.33 (which the
    emulator is): it reports the API as not enabled, as against a real 1.33 cluster."""
    k = kubectl_of("1.27", emu, tmp_path)
    proc = await k.run("auth", "whoami", check=False)
    assert proc.returncode == 1
    assert "the selfsubjectreviews API is not enabled in the cluster" in proc.stderr.decode()
