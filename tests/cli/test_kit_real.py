"""The deployment kit on a real kube-apiserver, with the kubectl on PATH and an old one (1.27):
``kubetrio crds | kubectl apply -f -`` installs CRDs the server serves; ``kubectl apply -k`` of
``config/with-webhooks`` and of every overlay beside it passes a server dry run, then
applies, then applies again with nothing to change. What a cluster without cert-manager or
prometheus-operator answers for their objects is pinned here too.

Each run has a control plane of its own: the kit is mostly cluster-scoped objects (CRDs,
ClusterRoles, webhook configurations), which no namespace keeps apart.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from kubetrio.cmd.kustomize import render
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.kubectl import Kubectl, kubectl_env
from kubetrio.testing.plugin import control_plane_assets

pytestmark = [pytest.mark.kubectl, pytest.mark.process, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "config"
FIXTURES = Path(__file__).parent / "fixtures"
SERVICE_MONITOR_CRD = FIXTURES / "monitoring.coreos.com_servicemonitors.yaml"
CERT_MANAGER_CRDS = FIXTURES / "cert-manager.io_crds.yaml"
NS = "kubetrio-system"
# Applied alone after config/with-webhooks: each is a part of it, so nothing changes
# (config/manager and config/default are too, but with the Deployment the overlay patches).
OVERLAYS = ("crd", "rbac", "webhook", "certmanager", "prometheus", "with-webhooks")
VERSIONS = ["path", "1.27"]


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    with ControlPlane(assets=control_plane_assets()) as plane:
        yield plane


def kubectl_binary(version: str) -> str:
    """The kubectl on PATH, or ``kubectl.<version>`` beside it (fails, never skips, if absent:
    the kit's claim is that these versions work)."""
    which = shutil.which("kubectl")
    if which is None:
        pytest.fail("kubectl is not on PATH")
    if version == "path":
        return which
    binary = Path(os.path.realpath(which)).parent / f"kubectl.{version}"
    if not binary.exists():
        pytest.fail(f"kubectl.{version} is not installed beside the kubectl on PATH")
    return str(binary)


async def kubetrio(*args: str) -> bytes:
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-m", "kubetrio.cmd.main", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def lines(out: bytes) -> list[str]:
    return out.decode().splitlines()


async def crds_pipe_into_kubectl_apply(kubectl: Kubectl) -> None:
    """``kubetrio crds | kubectl apply -f -``: created, established, served (empty lists), and
    unchanged when applied again."""
    stream = await kubetrio("crds")
    created = lines((await kubectl.run("apply", "-f", "-", stdin=stream)).stdout)
    assert sorted(created) == [
        f"customresourcedefinition.apiextensions.k8s.io/{plural}.machine.sapcloud.io created"
        for plural in ("machineclasses", "machinedeployments", "machines", "machinesets")
    ]
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    for plural in ("machines", "machinesets", "machinedeployments", "machineclasses"):
        listed = await kubectl.run("get", f"{plural}.machine.sapcloud.io", "-A")
        assert listed.stderr.decode().strip() == "No resources found", listed.stderr
    again = lines((await kubectl.run("apply", "-f", "-", stdin=stream)).stdout)
    assert [line.rsplit(" ", 1)[1] for line in again] == ["unchanged"] * 4, again


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_crds_then_the_kit_and_its_overlays_apply_on_a_real_server(
    version: str, plane: ControlPlane, tmp_path: Path
) -> None:
    kubectl = Kubectl(kubectl_binary(version), kubectl_env(plane.kubeconfig_path, tmp_path))
    await crds_pipe_into_kubectl_apply(kubectl)
    # A server dry run cannot put objects into a namespace it only pretends to create: the
    # real server answers NotFound for each. The namespace comes first.
    await kubectl.run("create", "namespace", NS)
    default = str(KIT / "with-webhooks")

    # Without cert-manager and prometheus-operator their kinds are unknown to the server:
    # kubectl names each object and exits 1; every other object passes the dry run.
    bare = await kubectl.run("apply", "--dry-run=server", "-k", default, check=False)
    refused = bare.stderr.decode()
    assert bare.returncode == 1, refused
    for kind, api in (
        ("Certificate", "cert-manager.io/v1"),
        ("Issuer", "cert-manager.io/v1"),
        ("ServiceMonitor", "monitoring.coreos.com/v1"),
    ):
        assert f'no matches for kind "{kind}" in version "{api}"' in refused, refused
    assert len(lines(bare.stdout)) == len(render(KIT, "with-webhooks")) - 3, bare.stdout.decode()

    await kubectl.run("apply", "-f", str(SERVICE_MONITOR_CRD), "-f", str(CERT_MANAGER_CRDS))
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    dry = lines((await kubectl.run("apply", "--dry-run=server", "-k", default)).stdout)
    assert len(dry) == len(render(KIT, "with-webhooks")), dry
    assert all(line.endswith("(server dry run)") for line in dry), dry
    nothing = await kubectl.run("get", "deployments,serviceaccounts", "-n", NS)
    assert b"kubetrio-controller-manager" not in nothing.stdout

    applied = lines((await kubectl.run("apply", "-k", default)).stdout)
    # The namespace was there already (now with kubectl's last-applied annotation), the CRDs
    # too, as `kubetrio crds` printed them; the rest is new.
    assert applied[0] == f"namespace/{NS} configured", applied
    assert [line.rsplit(" ", 1)[1] for line in applied[1:5]] == ["unchanged"] * 4, applied
    assert [line.rsplit(" ", 1)[1] for line in applied[5:]] == ["created"] * (len(dry) - 5)
    deployment = await kubectl.json("get", "deployment", "kubetrio-controller-manager", "-n", NS)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == (
        "kubetrio-controller-manager"
    )

    for overlay in OVERLAYS:
        folder = str(KIT / overlay)
        dry = lines((await kubectl.run("apply", "--dry-run=server", "-k", folder)).stdout)
        assert len(dry) == len(render(KIT, overlay)), (overlay, dry)
        assert all(line.endswith("unchanged (server dry run)") for line in dry), (overlay, dry)
        again = lines((await kubectl.run("apply", "-k", folder)).stdout)
        assert all(line.endswith(" unchanged") for line in again), (overlay, again)
