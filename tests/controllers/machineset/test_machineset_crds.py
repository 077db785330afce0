"""The MachineSet and MachineDeployment CRDs in config/crd apply with kubectl, keep MCM's wire
shape (int-or-string rollout bounds, the set's ``machineSetCondition``), serve the typed views,
keep status behind its subresource and print MCM's columns under MCM's short names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from tests.helpers.kube import Kubectl

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

CRD_DIR = Path(__file__).resolve().parents[3] / "config" / "crd"
API = "machine.sapcloud.io/v1alpha1"

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"pool": "a"}},
    "spec": {
        "class": {"kind": "MachineClass", "name": "small"},
        "nodeTemplate": {"metadata": {"labels": {"role": "worker"}}},
        "machineConfiguration": {"drainTimeout": "30m"},
    },
}

MACHINE_SET = {
    "apiVersion": API,
    "kind": "MachineSet",
    "metadata": {"name": "pool-a", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"pool": "a"}},
        "template": TEMPLATE,
        "minReadySeconds": 10,
    },
}

MACHINE_DEPLOYMENT = {
    "apiVersion": API,
    "kind": "MachineDeployment",
    "metadata": {"name": "pool-b", "namespace": "default"},
    "spec": {
        "replicas": 4,
        "selector": {
            "matchLabels": {"pool": "a"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}],
        },
        "template": TEMPLATE,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1},
        },
        "revisionHistoryLimit": 2,
        "progressDeadlineSeconds": 600,
        "paused": True,
        "rollbackTo": {"revision": 0},
    },
}


async def test_machineset_and_deployment_crds_serve_typed_objects(
    emu: Emulator, kubectl: Kubectl
) -> None:
    out = await kubectl.out("apply", "-k", str(CRD_DIR))
    assert "machinesets.machine.sapcloud.io created" in out
    assert "machinedeployments.machine.sapcloud.io created" in out
    await kubectl.apply([MACHINE_SET, MACHINE_DEPLOYMENT])

    client = Client.from_url(emu.url, token=emu.token)
    ms = await client.get(MachineSet, "pool-a", namespace="default")
    assert ms.spec.replicas == 3
    assert ms.spec.selector is not None and ms.spec.selector.match_labels == {"pool": "a"}
    assert ms.spec.template.metadata.labels == {"pool": "a"}
    assert ms.spec.template.spec.class_.name == "small"
    config = ms.spec.template.spec.machine_configuration
    assert config is not None and config.drain_timeout == "30m"
    assert ms.spec.min_ready_seconds == 10

    md = await client.get(MachineDeployment, "pool-b", namespace="default")
    rolling = md.spec.strategy.rolling_update
    assert md.spec.strategy.type == "RollingUpdate"
    assert rolling is not None and (rolling.max_surge, rolling.max_unavailable) == ("25%", 1)
    assert md.spec.paused and md.spec.revision_history_limit == 2
    assert md.spec.progress_deadline_seconds == 600
    assert md.spec.rollback_to is not None and md.spec.rollback_to.revision == 0
    assert md.spec.selector is not None
    assert md.spec.selector.match_expressions[0].values == ("z1",)

    # Status only through the status subresource, in MCM's field names.
    status = {
        "replicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 1,
        "fullyLabeledReplicas": 3,
        "observedGeneration": 1,
        "machineSetCondition": [{"type": "ReplicaFailure", "status": "True", "reason": "X"}],
        "failedMachines": [
            {"name": "pool-a-1", "providerID": "sim://1", "lastOperation": {"state": "Failed"}}
        ],
    }
    ms = await client.patch(MachineSet, "pool-a", {"status": status}, namespace="default")
    assert ms.status.replicas == 0
    ms = await client.patch(
        MachineSet, "pool-a", {"status": status}, namespace="default", subresource="status"
    )
    assert (ms.status.replicas, ms.status.ready_replicas, ms.status.available_replicas) == (3, 2, 1)
    assert ms.condition("ReplicaFailure") is not None
    assert ms.status.failed_machines is not None
    assert ms.status.failed_machines[0].last_operation.state == "Failed"
    md = await client.patch(
        MachineDeployment,
        "pool-b",
        {
            "status": {
                "replicas": 4,
                "readyReplicas": 3,
                "updatedReplicas": 2,
                "availableReplicas": 1,
            }
        },
        namespace="default",
        subresource="status",
    )
    assert md.status.updated_replicas == 2

    sets = (await kubectl.out("get", "mcs", "-n", "default")).splitlines()
    assert sets[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert sets[1].split()[:4] == ["pool-a", "3", "3", "2"]
    deployments = (await kubectl.out("get", "mcd", "-n", "default")).splitlines()
    assert deployments[0].split() == ["NAME", "READY", "DESIRED", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deployments[1].split()[:5] == ["pool-b", "3", "4", "2", "1"]


async def test_schema_rejects_wrong_types_naming_the_field(emu: Emulator, kubectl: Kubectl) -> None:
    await kubectl.out("apply", "-k", str(CRD_DIR))
    bad = {**MACHINE_SET, "spec": {**MACHINE_SET["spec"], "replicas": "three"}}
    proc = await kubectl.run("apply", "-f", "-", stdin=_yaml(bad), check=False)
    assert proc.returncode != 0
    assert "spec.replicas" in proc.stderr.decode()


def _yaml(doc: dict[str, Any]) -> bytes:
    import yaml

    return yaml.safe_dump(doc).encode()
