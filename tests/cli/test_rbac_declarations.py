"""RBAC declarations: merged and compacted as controller-gen does, deterministic; the committed
``config/rbac`` roles are the generator's output; every informer a controller's setup opens is
covered by the list/watch its declaration states."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kubetrio.cmd import rbac as rbac_cmd
from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.main import main
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.gen.rbac import Permissions, PolicyRule, compact, roles, rule
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.manager.plugins import ControllerRegistry, PluginError

REPO = Path(__file__).resolve().parents[2]


def test_verbs_merge_per_resource_and_resources_group_by_verbs() -> None:
    rules = [
        rule("", ["pods"], ["list", "watch"]),
        rule("", ["nodes"], ["watch", "list"]),
        rule("", ["pods"], ["delete"]),
        rule("apps", ["deployments"], ["list", "watch"]),
        rule("", ["events"], ["create"]),
        rule("", ["pods/eviction"], ["create"]),
    ]
    expected = [
        PolicyRule(("create",), ("",), ("events", "pods/eviction")),
        PolicyRule(("list", "watch"), ("",), ("nodes",)),
        PolicyRule(("delete", "list", "watch"), ("",), ("pods",)),
        PolicyRule(("list", "watch"), ("apps",), ("deployments",)),
    ]
    assert compact(rules) == expected
    for seed in range(5):
        shuffled = list(rules)
        random.Random(seed).shuffle(shuffled)
        assert compact(shuffled) == expected


def test_named_url_and_wildcard_rules() -> None:
    merged = compact(
        [
            PolicyRule(("get",), ("",), ("configmaps",), resource_names=("b", "a")),
            PolicyRule(("update",), ("",), ("configmaps",), resource_names=("a", "b")),
            PolicyRule(("get",), ("",), ("secrets",), resource_names=("x",)),
            rule("", ["secrets"], ["get", "list"]),  # covers the named get
            PolicyRule(("get",), non_resource_urls=("/metrics",)),
            PolicyRule(("get",), non_resource_urls=("/healthz",)),
            rule("", ["nodes"], ["*", "get"]),
        ]
    )
    assert [r.to_dict() for r in merged] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["a", "b"],
            "verbs": ["get", "update"],
        },
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
        {"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]},
    ]


def test_the_role_keeps_only_what_the_cluster_role_does_not_grant() -> None:
    pair = roles(
        [
            Permissions(cluster=(rule("", ["events"], ["create"]),)),
            Permissions(
                own_namespace=(
                    rule("coordination.k8s.io", ["leases"], ["get", "create", "patch"]),
                    rule("", ["events"], ["create", "patch"]),
                )
            ),
        ],
        namespace="ns1",
    )
    assert pair.role()["metadata"] == {"name": "kubetrio-leader-election-role", "namespace": "ns1"}
    assert pair.role()["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["patch"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["create", "get", "patch"],
        },
    ]
    assert pair.cluster_role()["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    ]


def test_the_committed_roles_are_the_generators_output(tmp_path: Path) -> None:
    assert main(["rbac", "--write", str(tmp_path)]) == 0
    for name in (rbac_cmd.ROLE_FILE, rbac_cmd.LEADER_ELECTION_ROLE_FILE):
        committed = (REPO / "config" / "rbac" / name).read_text()
        assert committed == (tmp_path / name).read_text(), (
            f"config/rbac/{name} is stale: run `kubetrio rbac --write config/rbac`"
        )


def test_write_keeps_hand_edited_kit_files(tmp_path: Path) -> None:
    (tmp_path / "service_account.yaml").write_text("# mine\n")
    assert main(["rbac", "--write", str(tmp_path), "--controllers", "storagegc"]) == 0
    assert (tmp_path / "service_account.yaml").read_text() == "# mine\n"
    assert "nodes" in (tmp_path / "role.yaml").read_text()
    assert (tmp_path / "kustomization.yaml").exists()


def test_unknown_controller_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rbac", "--controllers", "machine,nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kubetrio: --controllers: unknown nope; known:")


def test_a_controller_without_a_declaration_is_named() -> None:
    registry = ControllerRegistry({"bare": "kubetrio.runtime.controller.queue:WorkQueue"})
    with pytest.raises(PluginError, match=r"'bare'.*declares no RBAC"):
        registry.permissions("bare")


@pytest.mark.parametrize("name", sorted(BUILTIN_CONTROLLERS))
def test_every_informer_a_setup_opens_is_declared(name: str) -> None:
    registry = ControllerRegistry(BUILTIN_CONTROLLERS)
    manager = Manager(
        Client.from_url("http://127.0.0.1:9", token="unused"),
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    config = ManagerConfig(storage=StorageOptions(backend_url="http://127.0.0.1:9"))
    registry.setup(name)(manager, config)
    declared = {atom for r in compact(registry.permissions(name).cluster) for atom in r.atoms()}
    opened = {(i.kind.KIND.group, i.kind.KIND.plural) for i in manager.cache.informers}
    assert opened, "every built-in controller watches something"
    missing = sorted(
        (group, plural, verb)
        for group, plural in opened
        for verb in ("list", "watch")
        if (group, plural, verb) not in declared
    )
    assert missing == []
