"""``kubetrio simulate`` as users run it: a process beside an API server it knows only by a
kubeconfig, on our emulator (``kubetrio emulator``, another process) and on a real
kube-apiserver. kubectl, an independent client, creates a Node, a Deployment and a claimed
pod; the simulation makes the Node Ready, schedules and starts the pods, provisions and
attaches the volume, and its storage service registers the Node, all through the API server.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.kubectl import Kubectl, kubectl_env
from tests.helpers.emulator_process import announced, start_announced

pytestmark = [pytest.mark.kubectl, pytest.mark.process, pytest.mark.slow]

WAIT = "90s"


@asynccontextmanager
async def simulating(kubeconfig: Path, *extra: str) -> AsyncIterator[dict[str, str]]:
    """``kubetrio simulate`` running against ``kubeconfig`` until the block ends; what it
    announced."""
    proc = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "kubetrio.cmd.main",
            "simulate",
            "--kubeconfig",
            str(kubeconfig),
            "--fast",
            "--storage",
            "--exit-with-parent",
            *extra,
        ],
        stdin=-1,
        stdout=-1,
    )
    assert proc.stdout is not None and proc.stdin is not None
    buf = b""
    try:
        with trio.fail_after(60):
            while b"kubetrio simulate running" not in buf:
                data = await proc.stdout.receive_some(4096)
                assert data, buf
                buf += data
        yield announced(buf.decode())
    finally:
        await proc.stdin.aclose()
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0


@asynccontextmanager
async def a_server(kind: str, tmp_path: Path) -> AsyncIterator[Path]:
    """A kubeconfig of the emulator's process or of a real control plane of this test's own."""
    if kind == "emulator":
        proc, _ = await start_announced(tmp_path)
        try:
            yield tmp_path / "kubeconfig"
        finally:
            proc.terminate()
            await proc.wait()
        return
    from kubetrio.testing.plugin import CONTROL_PLANE_CONTROLLERS, control_plane_assets

    with ControlPlane(controllers=CONTROL_PLANE_CONTROLLERS, assets=control_plane_assets()) as cp:
        yield cp.kubeconfig_path


def workload(node: str) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {node}
  labels: {{kubernetes.io/hostname: {node}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: c, image: nginx}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: default}}
spec:
  storageClassName: standard
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: db, namespace: default}}
spec:
  containers: [{{name: c, image: postgres}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: data}}}}]
"""


def read(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return dict(json.loads(answer.read()))


@pytest.mark.parametrize("server", ["emulator", "real"])
async def test_simulate_makes_a_cluster_of_any_api_server(server: str, tmp_path: Path) -> None:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail("kubectl is not on PATH")
    node = f"sim-{secrets.token_hex(3)}"
    async with a_server(server, tmp_path) as kubeconfig, simulating(kubeconfig) as words:
        kubectl = Kubectl(binary, kubectl_env(kubeconfig, tmp_path))
        manifest = tmp_path / "workload.yaml"
        manifest.write_text(workload(node))
        # A real server admits pods only once kube-controller-manager made the namespace's
        # ServiceAccount; kubectl waits for it as a user would.
        if server == "real":
            await kubectl.out("wait", "--for=create", "serviceaccount/default", "--timeout", WAIT)
        await kubectl.out("apply", "-f", str(manifest))
        await kubectl.out("wait", "--for=condition=Ready", f"node/{node}", "--timeout", WAIT)
        await kubectl.out(
            "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout", WAIT
        )
        await kubectl.out("wait", "--for=condition=Ready", "pod/db", "--timeout", WAIT)
        db = await kubectl.json("get", "pod/db")
        assert db["spec"]["nodeName"] == node
        claim = await kubectl.json("get", "pvc/data")
        assert claim["status"]["phase"] == "Bound"
        attachments = await kubectl.json("get", "volumeattachments")
        assert [a["spec"]["nodeName"] for a in attachments["items"]] == [node]
        listed = await trio.to_thread.run_sync(read, f"{words['storage-backend']}/nodes")
        assert node in {n["name"] for n in listed["items"]}, listed
        # The API server's own address serves none of the simulation's services.
        assert words["cloud-endpoint"] != words.get("url")
