"""Sharding on the command line, in process: the ``sharding`` section's mistakes are one line
naming the field, ``kubetrio rbac --sharding`` and ``kubetrio manifests --sharding N`` add what
sharding needs, and ``kubetrio sharder`` refuses to start without the replicas' settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrio.cmd.config.sections import LeaderElectionConfig, ManagerConfig, ShardingConfig
from kubetrio.cmd.main import build_parser, main
from kubetrio.cmd.manifests import documents
from kubetrio.cmd.sharding import sharded_kinds, sharding_options
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.runtime.sharding.labels import shard_label
from tests.helpers.config import error_of, load


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--sharding"],
            "flag --sharding (sharding.enabled): needs leaderElection.enabled (--leader-elect)",
        ),
        (
            ["--sharding", "--leader-elect", "--shard-renew-deadline", "20s"],
            "flag --shard-renew-deadline (sharding.renewDeadline): must be less than "
            "sharding.leaseDuration (15s), got 20s",
        ),
        (
            ["--sharding", "--leader-elect", "--shard-id", "Pod-1"],
            "flag --shard-id (sharding.shardId): expected 1-63 lower-case letters",
        ),
        (
            ["--sharding", "--leader-elect", "--sharding-ring", "a/b"],
            "flag --sharding-ring (sharding.ring): expected 1-63 letters",
        ),
        (
            ["--sharding", "--leader-elect", "--sharding-namespace", "Kube"],
            "flag --sharding-namespace (sharding.namespace): expected a lower-case DNS-1123",
        ),
        (
            ["--sharding-concurrent-moves", "0"],
            "flag --sharding-concurrent-moves (sharding.concurrentMoves): expected int >= 1",
        ),
    ],
)
def test_mistakes_name_the_field(args: list[str], message: str) -> None:
    error = error_of(args)
    assert error.startswith(message), error


def test_the_section_becomes_the_runtime_options() -> None:
    config = load(["--sharding", "--leader-elect", "--shard-id", "pod-1", "--run-sharder=false"])
    options = sharding_options(config, "kubetrio-system")
    assert options is not None
    assert (options.ring, options.namespace, options.shard_id) == (
        "kubetrio",
        "kubetrio-system",
        "pod-1",
    )
    assert not options.run_sharder
    assert sharding_options(load(), "kubetrio-system") is None


def test_the_machine_controllers_shard_and_follow_their_owners() -> None:
    kinds = {
        k.kind.__name__: (k.controlled, k.reconciled)
        for k in sharded_kinds(ControllerRegistry(BUILTIN_CONTROLLERS))
    }
    assert kinds == {
        "Machine": (True, True),  # reconciled by the machine controller, follows its set
        "MachineSet": (True, True),  # reconciled by its controller, follows its deployment
        "MachineDeployment": (False, False),
    }


def rules_for(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    (role,) = [d for d in docs if d["kind"] == kind and "rules" in d]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def lease_verbs(rules: list[dict[str, Any]]) -> set[str]:
    return {
        verb for rule in rules if "leases" in rule.get("resources", ()) for verb in rule["verbs"]
    }


def test_rbac_adds_the_shard_leases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rbac"]) == 0
    plain = list(yaml.safe_load_all(capsys.readouterr().out))
    assert main(["rbac", "--sharding"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    sharded = list(yaml.safe_load_all(out))
    assert not {"list", "watch", "delete"} & lease_verbs(rules_for(plain, "Role"))
    assert {"list", "watch", "delete"} <= lease_verbs(rules_for(sharded, "Role"))


def manifests(*args: str) -> list[dict[str, Any]]:
    return documents(build_parser().parse_args(["manifests", *args]))


def test_manifests_run_replicas_with_sharding_and_its_webhook() -> None:
    docs = manifests("--sharding", "3", "--webhooks", "--sharding-webhook")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 3
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--sharding" in args and "--sharding-webhook" in args and "--leader-elect" in args
    assert {"list", "watch", "delete"} <= lease_verbs(rules_for(docs, "Role"))
    (hook,) = [
        d
        for d in docs
        if d["kind"] == "MutatingWebhookConfiguration"
        and d["metadata"]["name"].startswith("kubetrio-sharder-")
    ]
    kinds = {h["rules"][0]["resources"][0] for h in hook["webhooks"]}
    assert kinds == {"machines", "machinesets", "machinedeployments"}
    for h in hook["webhooks"]:
        assert h["failurePolicy"] == "Ignore"
        assert h["clientConfig"]["service"]["name"] == "kubetrio-webhook-service"
        assert h["objectSelector"]["matchExpressions"][0]["key"] == shard_label("kubetrio")
    assert hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    plain = manifests("--sharding", "2")
    assert not [d for d in plain if d["metadata"]["name"].startswith("kubetrio-sharder-")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sharding", "0"), "kubetrio: --sharding: expected at least 1 replica, got 0"),
        (("--sharding-webhook",), "kubetrio: --sharding-webhook: only with --sharding"),
        (
            ("--sharding", "2", "--sharding-webhook"),
            "kubetrio: --sharding-webhook: only with --webhooks",
        ),
        (
            ("--sharding", "2", "--controllers", "storagegc"),
            "kubetrio: --sharding: none of storagegc shards",
        ),
    ],
)
def test_manifests_mistakes_are_one_line(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


def test_the_sharder_needs_the_sharding_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sharder", "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubetrio sharder: sharding.enabled (--sharding) is off"), err
    config = ManagerConfig(
        sharding=ShardingConfig(enabled=True), leader_election=LeaderElectionConfig(enabled=True)
    )
    assert sharded_kinds(ControllerRegistry(BUILTIN_CONTROLLERS), config)
