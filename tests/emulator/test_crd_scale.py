"""The ``scale`` subresource of custom resources, as kube-apiserver serves it: an autoscaling/v1
Scale mapped through the CRD's replica paths, writable with PUT and merge/JSON patches, absent
where the CRD does not declare it; ``kubectl scale`` of MachineSets and MachineDeployments works
with the oldest and newest kubectl we support."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from tests.helpers.kube import kubectl_of
from tests.helpers.machines import install_crds

API = "machine.sapcloud.io/v1alpha1"
BASE = "/apis/machine.sapcloud.io/v1alpha1/namespaces/default"


def machine_set(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"set": name}},
            "template": {"metadata": {"labels": {"set": name}}},
        },
    }


def machine_deployment(name: str, replicas: int) -> dict[str, Any]:
    return {**machine_set(name, replicas), "kind": "MachineDeployment"}


async def test_scale_reads_and_writes_through_the_replica_paths(
    emu: Emulator, client: EmuClient
) -> None:
    install_crds(emu)
    emu.create(machine_set("pool", 3))
    kube = Client.from_url(emu.url, token=emu.token)
    await kube.patch(
        MachineSet, "pool", {"status": {"replicas": 2}}, namespace="default", subresource="status"
    )

    reply = await client.get(f"{BASE}/machinesets/pool/scale")
    assert reply.status == 200
    scale = reply.json()
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2}  # no labelSelectorPath, as MCM's CRD
    assert scale["metadata"]["name"] == "pool"
    before = await kube.get(MachineSet, "pool", namespace="default")
    assert scale["metadata"]["resourceVersion"] == before.resource_version

    # PUT: only spec replicas change; the status and the rest of the spec stay.
    scale["spec"]["replicas"] = 5
    reply = await client.request("PUT", f"{BASE}/machinesets/pool/scale", scale)
    assert reply.status == 200, reply.body
    assert reply.json()["spec"] == {"replicas": 5}
    after = await kube.get(MachineSet, "pool", namespace="default")
    assert after.spec.replicas == 5 and after.status.replicas == 2
    assert after.spec.template.metadata.labels == {"set": "pool"}
    assert after.metadata.generation == before.metadata.generation + 1

    # A stale resourceVersion is a conflict, as for any update.
    reply = await client.request("PUT", f"{BASE}/machinesets/pool/scale", scale)
    assert reply.status == 409

    for ctype, patch in (
        ("application/merge-patch+json", {"spec": {"replicas": 1}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": 1}]),
    ):
        reply = await client.request(
            "PATCH", f"{BASE}/machinesets/pool/scale", patch, content_type=ctype
        )
        assert reply.status == 200, reply.body
        assert (await kube.get(MachineSet, "pool", namespace="default")).spec.replicas == 1
        await client.request(
            "PATCH",
            f"{BASE}/machinesets/pool/scale",
            {"spec": {"replicas": 4}},
            content_type="application/merge-patch+json",
        )
    # Custom resources take no strategic merge patch, on scale neither.
    reply = await client.request(
        "PATCH",
        f"{BASE}/machinesets/pool/scale",
        {"spec": {"replicas": 2}},
        content_type="application/strategic-merge-patch+json",
    )
    assert reply.status == 415

    reply = await client.request(
        "PATCH",
        f"{BASE}/machinesets/pool/scale",
        {"spec": {"replicas": -1}},
        content_type="application/merge-patch+json",
    )
    assert reply.status == 422
    assert "spec.replicas: Invalid value: -1" in reply.json()["message"]
    assert (await kube.get(MachineSet, "pool", namespace="default")).spec.replicas == 4

    # Machines declare no scale subresource: 404, as kube-apiserver.
    emu.create(
        {"apiVersion": API, "kind": "Machine", "metadata": {"name": "m", "namespace": "default"}}
    )
    assert (await client.get(f"{BASE}/machines/m/scale")).status == 404
    assert (await client.get(f"{BASE}/machinesets/missing/scale")).status == 404


@pytest.mark.kubectl
@pytest.mark.parametrize("version", ["1.27", "1.33"])
async def test_kubectl_scale_machinesets_and_deployments(
    emu: Emulator, tmp_path: Path, version: str
) -> None:
    kubectl = kubectl_of(version, emu, tmp_path)
    install_crds(emu)
    emu.create(machine_deployment("web", 3))
    emu.create(machine_set("web-1", 3))

    out = await kubectl.out("scale", "machinedeployment/web", "--replicas=5", "-n", "default")
    assert "machinedeployment.machine.sapcloud.io/web scaled" in out
    out = await kubectl.out("scale", "machineset/web-1", "--replicas=2", "-n", "default")
    assert "machineset.machine.sapcloud.io/web-1 scaled" in out
    # Short names and a precondition (a GET then a PUT of the Scale).
    await kubectl.out(
        "scale", "mcs", "web-1", "--current-replicas=2", "--replicas=1", "-n", "default"
    )
    proc = await kubectl.run(
        "scale", "mcd/web", "--current-replicas=3", "--replicas=9", "-n", "default", check=False
    )
    assert proc.returncode != 0  # 5 replicas, not 3: refused, nothing written

    kube = Client.from_url(emu.url, token=emu.token)
    assert (await kube.get(MachineDeployment, "web", namespace="default")).spec.replicas == 5
    assert (await kube.get(MachineSet, "web-1", namespace="default")).spec.replicas == 1
