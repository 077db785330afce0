"""Our kinds' webhook logic (defaults, checks, ratcheting) and the generated manifests, which
``config/webhook`` must equal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.main import main
from kubetrio.cmd.webhooks import documents
from kubetrio.controllers.machine import webhooks as machine_webhooks
from kubetrio.controllers.machinedeployment import webhooks as md_webhooks
from kubetrio.controllers.machineset import webhooks as ms_webhooks
from kubetrio.runtime.webhook import Denied
from kubetrio.runtime.webhook.fields import FieldValidator
from kubetrio.runtime.webhook.manifest import as_url
from kubetrio.runtime.webhook.review import AdmissionRequest

REPO = Path(__file__).resolve().parents[3]
REQUEST = msgspec.convert(
    {
        "uid": "u",
        "kind": {"group": "machine.sapcloud.io", "version": "v1alpha1", "kind": "X"},
        "operation": "CREATE",
    },
    AdmissionRequest,
)


def deployment(**spec: Any) -> MachineDeployment:
    labels = {"pool": "a"}
    doc = {
        "metadata": {"name": "md"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"class": {"name": "small"}}},
            **spec,
        },
    }
    return msgspec.convert(doc, MachineDeployment)


def test_the_committed_config_webhook_is_the_generators_output(tmp_path: Path) -> None:
    assert main(["webhooks", "manifest", "--write", str(tmp_path)]) == 0
    for name in ("manifests.yaml", "service.yaml", "kustomization.yaml"):
        assert (REPO / "config" / "webhook" / name).read_text() == (tmp_path / name).read_text(), (
            f"config/webhook/{name} is stale: run `kubetrio webhooks manifest --write "
            "config/webhook`"
        )


def test_manifests_follow_the_enabled_controllers() -> None:
    docs = documents(["machineset", "safety"], "ns")
    assert [d["kind"] for d in docs] == ["ValidatingWebhookConfiguration"]
    [hook] = docs[0]["webhooks"]
    assert hook["rules"][0]["resources"] == ["machinesets"]
    assert hook["clientConfig"]["service"] == {
        "name": "kubetrio-webhook-service",
        "namespace": "ns",
        "path": "/validate-machine-sapcloud-io-v1alpha1-machineset",
    }
    assert documents(["storagegc"], "ns") == []
    url = as_url(docs[0], "https://127.0.0.1:1/", b"PEM")
    assert url["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:1/validate-machine-sapcloud-io-v1alpha1-machineset",
        "caBundle": "UEVN",
    }


def test_deployment_defaults_fill_only_what_is_missing() -> None:
    result = trio.run(md_webhooks.default, deployment(), REQUEST)
    assert result.spec.strategy.type == "RollingUpdate"
    assert result.spec.strategy.rolling_update is not None
    assert result.spec.strategy.rolling_update.max_surge == 1
    assert result.spec.strategy.rolling_update.max_unavailable == 1
    kept = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "30%"}})
    result = trio.run(md_webhooks.default, kept, REQUEST)
    assert result.spec.strategy.rolling_update is not None
    assert result.spec.strategy.rolling_update.max_surge == "30%"
    recreate = trio.run(md_webhooks.default, deployment(strategy={"type": "Recreate"}), REQUEST)
    assert recreate.spec.strategy.rolling_update is None
    assert result.spec.revision_history_limit is None  # unset means "keep every old set"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"replicas": -1}, "spec.replicas: Replicas has to be a whole number"),
        (
            {"autoPreserveFailedMachineMax": -1},
            "spec.autoPreserveFailedMachineMax: must be a whole number",
        ),
        ({"strategy": {"type": "Sideways"}}, 'spec.strategy.type: "Sideways" must be one of'),
        (
            {"strategy": {"type": "InPlaceUpdate"}},
            "spec.strategy.inPlaceUpdate: InPlaceUpdate parameter cannot be nil for in-place "
            "update strategy",
        ),
        (
            {"strategy": {"type": "InPlaceUpdate", "inPlaceUpdate": {"orchestrationType": "Now"}}},
            'spec.strategy.inPlaceUpdate.orchestrationType: "Now" orchestrationType must be '
            "either Auto or Manual",
        ),
        (
            {
                "strategy": {
                    "type": "InPlaceUpdate",
                    "inPlaceUpdate": {"orchestrationType": "Auto", "maxUnavailable": "y"},
                }
            },
            'spec.strategy.inPlaceUpdate.maxUnavailable: "y" is not a percentage',
        ),
        (
            {
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "x", "maxUnavailable": 1},
                }
            },
            'spec.strategy.rollingUpdate.maxSurge: "x" is not a percentage',
        ),
        (
            {"template": {"metadata": {"labels": {"pool": "b"}}, "spec": {"class": {"name": "s"}}}},
            "spec.selector.matchLabels: is not matching with spec.template.metadata.labels",
        ),
        (
            {
                "strategy": {"type": "Recreate"},
                "template": {
                    "metadata": {"labels": {"pool": "a"}},
                    "spec": {
                        "class": {"name": "s"},
                        "machineConfiguration": {"healthTimeout": "-1m"},
                    },
                },
            },
            "spec.template.spec.machineConfiguration.healthTimeout: must be positive",
        ),
    ],
)
def test_deployment_problems_name_the_field(spec: dict[str, Any], problem: str) -> None:
    found = md_webhooks.problems(deployment(**spec))
    assert any(p.startswith(problem) for p in found), found


def test_an_effective_creation_timeout_must_be_a_duration() -> None:
    key = "node.machine.sapcloud.io/effective-creation-timeout"
    plain = deployment(strategy={"type": "Recreate"})
    good = msgspec.structs.replace(
        plain, metadata=msgspec.structs.replace(plain.metadata, annotations={key: "25m"})
    )
    assert md_webhooks.problems(good) == []
    bad = msgspec.structs.replace(
        good, metadata=msgspec.structs.replace(good.metadata, annotations={key: "soon"})
    )
    assert md_webhooks.problems(bad) == [
        f'metadata.annotations[{key}]: "soon" is not a duration (like 10m or 1h30m)'
    ]


def test_set_problems_include_its_machines() -> None:
    bad = msgspec.convert(
        {
            "metadata": {"name": "s"},
            "spec": {
                "selector": {"matchLabels": {"a": "1"}},
                "template": {"metadata": {"labels": {"a": "1"}}, "spec": {"class": {"kind": "X"}}},
            },
        },
        MachineSet,
    )
    assert ms_webhooks.problems(bad) == [
        "spec.template.spec.class.name: Required value",
        'spec.template.spec.class.kind: "X" is not MachineClass',
    ]


def test_a_machine_preserve_annotation_and_in_place_timeouts_are_checked() -> None:
    machine = msgspec.convert(
        {
            "metadata": {
                "name": "m",
                "annotations": {"node.machine.sapcloud.io/preserve": "forever"},
            },
            "spec": {
                "class": {"name": "c"},
                "machineConfiguration": {
                    "inPlaceUpdateTimeout": "soon",
                    "machinePreserveTimeout": "96h",
                },
            },
        },
        Machine,
    )
    problems = machine_webhooks.machine_problems(machine)
    assert problems[-1] == (
        'metadata.annotations[node.machine.sapcloud.io/preserve]: "forever" must be one of '
        "[auto-preserved false now when-failed]"
    )
    assert any(p.startswith("spec.machineConfiguration.inPlaceUpdateTimeout:") for p in problems)
    assert not any("machinePreserveTimeout" in p for p in problems)


def test_updates_ratchet_and_deletions_pass() -> None:
    validator = FieldValidator(
        Machine, lambda m: [] if m.spec.class_.name else ["spec.class.name: required"]
    )
    bad = msgspec.convert({"metadata": {"name": "m"}}, Machine)
    good = msgspec.convert({"metadata": {"name": "m"}, "spec": {"class": {"name": "c"}}}, Machine)
    with pytest.raises(Denied) as refused:
        trio.run(validator.validate_create, bad, REQUEST)
    assert refused.value.code == 422
    assert (
        refused.value.message
        == 'Machine.machine.sapcloud.io "m" is invalid: spec.class.name: required'
    )
    # Already bad before: an update (a finalizer, a label) still goes through.
    assert trio.run(validator.validate_update, bad, bad, REQUEST) is None
    # Made bad by the update: refused.
    with pytest.raises(Denied):
        trio.run(validator.validate_update, good, bad, REQUEST)
    assert trio.run(validator.validate_delete, bad, REQUEST) is None
