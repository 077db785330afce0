"""``kubectl scale`` of Deployments, ReplicaSets and StatefulSets, on the emulator and on a real
kube-apiserver alike: the autoscaling/v1 Scale subresource read, patched and (with
``--current-replicas``) written back with a precondition, by the oldest and newest kubectl we
support."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubetrio.testing.kubectl import Kubectl, kubectl_env
from kubetrio.testing.servers import ApiServer


def _kubectl(version: str, server: ApiServer, home: Path) -> Kubectl:
    which = shutil.which("kubectl")
    binary = Path(os.path.realpath(which)).parent / f"kubectl.{version}" if which else None
    if binary is None or not binary.exists():
        pytest.fail(f"kubectl.{version} not installed beside the kubectl on PATH")
    return Kubectl(str(binary), kubectl_env(server.kubeconfig_path, home))


def _workload(kind: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


@pytest.mark.kubectl
@pytest.mark.parametrize("version", ["1.27", "1.33"])
async def test_kubectl_scales_apps_workloads(
    api_server: ApiServer, tmp_path: Path, version: str
) -> None:
    kubectl = _kubectl(version, api_server, tmp_path)
    client, ns = api_server.client(), api_server.namespace
    base = f"/apis/apps/v1/namespaces/{ns}"
    for kind, plural in (
        ("Deployment", "deployments"),
        ("ReplicaSet", "replicasets"),
        ("StatefulSet", "statefulsets"),
    ):
        body = json.dumps(_workload(kind, "web", 0)).encode()
        await client.request("POST", f"{base}/{plural}", body=body)
        out = await kubectl.out("scale", f"{plural}/web", "--replicas=3", "-n", ns)
        assert f"{plural[:-1]}.apps/web scaled" in out
        # A precondition: kubectl reads the Scale, then writes it back with its version.
        await kubectl.out("scale", plural, "web", "--current-replicas=3", "--replicas=2", "-n", ns)
        refused = await kubectl.run(
            "scale", f"{plural}/web", "--current-replicas=7", "--replicas=9", "-n", ns, check=False
        )
        assert refused.returncode != 0
        scale = json.loads(await client.request("GET", f"{base}/{plural}/web/scale"))
        assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
        assert scale["spec"] == {"replicas": 2}
        assert scale["status"]["selector"] == "app=web"
        obj = json.loads(await client.request("GET", f"{base}/{plural}/web"))
        assert obj["spec"]["replicas"] == 2
