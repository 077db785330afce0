"""``kubetrio manifests --controllers`` and ``--check``, in process: the kit for a set of
controllers is derived from their code (the built-in set gives back the shipped kit), mistakes
are one line naming the flag, and the preflight names what a cluster or a user lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubetrio.cmd.assets import kit_documents
from kubetrio.cmd.config import DEFAULT_CONTROLLERS
from kubetrio.cmd.main import build_parser, main
from kubetrio.cmd.manifests import documents
from kubetrio.cmd.preflight import lacking
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from tests.helpers.rbac import bind, ok, role, rule, service_account, token


def manifests(*args: str) -> list[dict[str, Any]]:
    return documents(build_parser().parse_args(["manifests", *args]))


def without_controllers_flag(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for doc in docs:
        if doc["kind"] == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            assert container["args"][-1] == f"--controllers={','.join(DEFAULT_CONTROLLERS)}"
            container["args"] = container["args"][:-1]
    return docs


@pytest.mark.parametrize("webhooks", [(), ("--webhooks",)], ids=["default", "with-webhooks"])
def test_the_built_in_controllers_give_back_the_shipped_kit(webhooks: tuple[str, ...]) -> None:
    """The CRDs, roles and webhook configurations generated from the built-in controllers'
    code are the shipped files, object for object and in kustomize's order."""
    derived = manifests("--controllers", ",".join(DEFAULT_CONTROLLERS), *webhooks)
    folder = "with-webhooks" if webhooks else "default"
    assert without_controllers_flag(derived) == kit_documents(folder=folder)


def test_one_built_in_controller_gets_only_what_it_needs() -> None:
    docs = manifests("--controllers", "storagegc")
    assert not [doc for doc in docs if doc["kind"] == "CustomResourceDefinition"]
    (cluster_role,) = [d for d in docs if d["metadata"]["name"] == "kubetrio-manager-role"]
    groups = {group for rule in cluster_role["rules"] for group in rule["apiGroups"]}
    assert "machine.sapcloud.io" not in groups


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--controllers", "nope"), "kubetrio: --controllers: unknown nope; known: example,"),
        (("--controllers", " , "), "kubetrio: --controllers: name at least one controller"),
        (
            ("--controllers", "storagegc", "--webhooks"),
            "kubetrio: --webhooks: storagegc register no admission webhooks",
        ),
        (("--image", "a@"), "kubetrio: --image: image 'a@': expected NAME[:TAG][@DIGEST]"),
        (("--kubeconfig", "kc"), "kubetrio: --kubeconfig: only with --check"),
    ],
)
def test_mistakes_are_one_line_naming_the_flag(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


async def test_the_preflight_names_what_the_cluster_and_the_user_lack(emu: Emulator) -> None:
    admin = EmuClient(emu.url, emu.token)
    as_admin = Client.from_kubeconfig(str(emu.kubeconfig_path))
    kit = manifests("--webhooks")
    assert await lacking(as_admin, kit) == [
        "missing API cert-manager.io/v1 (Certificate, Issuer): install cert-manager "
        "(https://cert-manager.io/docs/installation/), or leave out --webhooks",
        "missing API monitoring.coreos.com/v1 (ServiceMonitor): install prometheus-operator, "
        "or pass --no-servicemonitor",
    ]
    assert await lacking(as_admin, manifests("--no-servicemonitor")) == []

    # Someone who may write the kit's namespaced objects only, and read ClusterRoles.
    await service_account(admin, "deployer")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubetrio-system"}}
    await ok(admin.request("POST", "/api/v1/namespaces", namespace))
    await role(admin, "deployer", [rule(["*"], ["*"], ["*"])], ns="kubetrio-system")
    await role(
        admin, "reader", [rule(["get"], ["clusterroles"], ["rbac.authorization.k8s.io"])], ns=None
    )
    subject = [{"kind": "ServiceAccount", "name": "deployer", "namespace": "default"}]
    await bind(admin, "deployer", "Role", "deployer", subject, ns="kubetrio-system")
    await bind(admin, "reader", "ClusterRole", "reader", subject, ns=None)
    deployer = Client.from_url(emu.url, await token(admin, "deployer"))
    lines = await lacking(deployer, manifests("--no-servicemonitor"))
    assert lines == [
        "forbidden: get, create, patch namespaces cluster-wide (kubectl apply)",
        "forbidden: get, create, patch customresourcedefinitions.apiextensions.k8s.io "
        "cluster-wide (kubectl apply)",
        "forbidden: create, patch clusterroles.rbac.authorization.k8s.io cluster-wide "
        "(kubectl apply)",
        "forbidden: get, create, patch clusterrolebindings.rbac.authorization.k8s.io "
        "cluster-wide (kubectl apply)",
    ]


HOOKED = {
    "__init__.py": "",
    "api.py": """
import msgspec
from kubetrio.api import KubeObject, resource


@resource(group="hooked.example.com", version="v1")
class Widget(KubeObject, kw_only=True):
    spec: dict[str, str] = msgspec.field(default_factory=dict)
""",
    "controller.py": """
from kubetrio.runtime.gen.rbac import Permissions, cached

from kt_hooked.api import Widget

RBAC = Permissions(cluster=cached(Widget.KIND))


def setup(manager, config):
    pass
""",
    "webhooks.py": """
from kubetrio.runtime.webhook.fields import FieldValidator

from kt_hooked.api import Widget


def register(webhooks):
    webhooks.webhook(Widget).validator(FieldValidator(Widget, lambda widget: []))
""",
}


def test_a_plugin_package_brings_its_crd_roles_and_webhooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed package's controller (an entry point): its kind's CRD, the roles from its
    declaration and the webhook configuration its ``webhooks`` module registers."""
    package = tmp_path / "kt_hooked"
    package.mkdir()
    for name, text in HOOKED.items():
        (package / name).write_text(text)
    info = tmp_path / "kt_hooked-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kt-hooked\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[kubetrio.controllers]\nhooked = kt_hooked.controller:setup\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    docs = manifests("--controllers", "hooked", "--webhooks")
    by_kind: dict[str, list[str]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc["metadata"]["name"])
    assert by_kind["CustomResourceDefinition"] == ["widgets.hooked.example.com"]
    assert by_kind["ValidatingWebhookConfiguration"] == [
        "kubetrio-validating-webhook-configuration"
    ]
    assert "MutatingWebhookConfiguration" not in by_kind
    assert by_kind["Certificate"] == ["kubetrio-serving-cert"]
    (validating,) = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = validating["webhooks"]
    assert hook["rules"][0]["resources"] == ["widgets"]
    (cluster_role,) = [d for d in docs if d["metadata"]["name"] == "kubetrio-manager-role"]
    assert cluster_role["rules"] == [
        {"apiGroups": ["hooked.example.com"], "resources": ["widgets"], "verbs": ["list", "watch"]}
    ]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--webhooks" in args and args[-1] == "--controllers=hooked"
