"""A user's controller deployed from the kit, and the default kit on a cluster without
cert-manager, each on the emulator and on a real kube-apiserver.

The tutorial's controller (greeter, docs/tutorial.md) is installed as a package; ``kubetrio
manifests --controllers greeter`` prints its kit (its CRD, the roles generated from its
declaration, the Deployment running it) and ``kubectl apply`` installs it. No kubelet runs the
Deployment: the manager runs as a process with the Deployment's arguments and the token of the
kit's ServiceAccount (TokenRequest, as ``kubectl create token``), never the admin's, and the
server's audit log must show none of its requests refused.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from kubetrio.emulator import EmulatorOptions
from kubetrio.emulator.server import serve_emulator
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.kubectl import Kubectl, find_kubectl, kubectl_env
from kubetrio.testing.plugin import control_plane_assets
from tests.helpers.machines import MACHINE_API, class_secret_doc, machine_class_doc
from tests.helpers.rbac_scenario import NAMESPACE, SA_USER, SERVICE_ACCOUNT, manager_process
from tests.helpers.tutorial import write_project

pytestmark = [pytest.mark.kubectl, pytest.mark.process, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SERVICE_MONITOR_CRD = ROOT / "tests/cli/fixtures/monitoring.coreos.com_servicemonitors.yaml"
# Installed without its dependencies (kubetrio is this interpreter's), built in pip's
# isolated build environment: the package, as pip lays it out.
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "-q", "--no-deps")
# Where the Deployment binds; the manager process binds free ports on loopback instead.
BIND_FLAGS = ("--metrics-bind-address", "--health-probe-bind-address")


@dataclass
class Server:
    """An API server for one test: its admin kubeconfig and its audit log."""

    name: str
    kubeconfig: Path
    audit: Path

    def kubeconfig_of(self, token: str, path: Path) -> Path:
        """The admin's kubeconfig with ``token`` in place of the admin's credentials."""
        doc: dict[str, Any] = yaml.safe_load(self.kubeconfig.read_text())
        context = next(c for c in doc["contexts"] if c["name"] == doc["current-context"])
        for user in doc["users"]:
            if user["name"] == context["context"]["user"]:
                user["user"] = {"token": token}
        path.write_text(yaml.safe_dump(doc))
        return path


@pytest.fixture(params=["emulator", "real"])
async def server(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Server]:
    """An emulator, then a control plane of this test's own (the kit is mostly cluster-scoped
    objects, which no namespace keeps apart), each writing an audit log."""
    if request.param == "emulator":
        audit = tmp_path / "audit.log"
        async with serve_emulator(options=EmulatorOptions(audit_log_path=audit)) as emu:
            yield Server("emulator", emu.kubeconfig_path, audit)
        return
    with ControlPlane(audit=True, assets=control_plane_assets()) as plane:
        yield Server("real", plane.kubeconfig_path, plane.audit_log_path)


def kubectl_for(server: Server, home: Path) -> Kubectl:
    binary = find_kubectl()
    assert binary is not None, "kubectl is not installed"
    return Kubectl(binary, kubectl_env(server.kubeconfig, home))


async def kubetrio(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "kubetrio.cmd.main", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def refused(audit: Path, user: str) -> tuple[int, list[str]]:
    """How many requests ``user`` made, and the ones refused (an authorization denial or a
    403), from either server's audit log."""
    made, denied = 0, []
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") != user:
            continue
        if event.get("stage") == "ResponseStarted":
            continue  # the real server logs a watch when it starts and again when it ends
        made += 1
        decision = event.get("annotations", {}).get("authorization.k8s.io/decision")
        if decision != "allow" or event.get("responseStatus", {}).get("code") == 403:
            denied.append(f"{event['verb']} {event['requestURI']}")
    return made, denied


async def test_the_default_kit_applies_without_cert_manager_and_machine_classes_are_written(
    server: Server, tmp_path: Path
) -> None:
    kubectl = kubectl_for(server, tmp_path)
    # prometheus-operator's CRD, not cert-manager's.
    await kubectl.run("apply", "-f", str(SERVICE_MONITOR_CRD))
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    check = ("manifests", "--check", "--kubeconfig", str(server.kubeconfig))
    code, out, err = await kubetrio(*check)
    assert (code, err) == (0, ""), out + err
    assert out.startswith("ok: "), out
    code, out, err = await kubetrio(*check, "--webhooks")
    assert code == 1, out + err
    assert out.splitlines() == [
        "missing API cert-manager.io/v1 (Certificate, Issuer): install cert-manager "
        "(https://cert-manager.io/docs/installation/), or leave out --webhooks"
    ]

    applied = await kubectl.run("apply", "-k", str(ROOT / "config" / "default"))
    assert b"webhook" not in applied.stdout, applied.stdout.decode()
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    created = await kubectl.apply([class_secret_doc(), machine_class_doc()])
    assert created, created
    stored = await kubectl.json("get", "machineclass", "small", "-n", "default")
    assert stored["apiVersion"] == MACHINE_API
    hooks = await kubectl.json(
        "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations"
    )
    assert [
        h["metadata"]["name"] for h in hooks["items"] if "kubetrio" in h["metadata"]["name"]
    ] == []

    # Why: the kit with webhooks, applied here anyway, registers them (kubectl refuses only the
    # Certificate and Issuer), and from then on every MachineClass write is refused.
    half = await kubectl.run("apply", "-k", str(ROOT / "config" / "with-webhooks"), check=False)
    assert half.returncode == 1 and b"Certificate" in half.stderr, half.stderr.decode()
    other = yaml.safe_dump(machine_class_doc("other")).encode()
    refused = await kubectl.run("apply", "-f", "-", stdin=other, check=False)
    assert refused.returncode == 1, refused.stdout.decode()
    assert "vmachineclass-v1alpha1.machine.sapcloud.io" in refused.stderr.decode()


async def test_the_tutorial_controller_deploys_from_the_kit_under_its_own_account(
    server: Server, tmp_path: Path
) -> None:
    started = time.monotonic()
    project = write_project(tmp_path / "greeter-project")
    site = tmp_path / "site"
    with trio.fail_after(120):
        await trio.run_process([*PIP_INSTALL, "--target", str(site), str(project)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBETRIO_")}
    env["PYTHONPATH"] = str(site)

    code, out, err = await kubetrio("manifests", "--controllers", "greeter", env=env)
    assert (code, err) == (0, ""), err
    kit = [doc for doc in yaml.safe_load_all(out) if doc]
    crds = [doc["metadata"]["name"] for doc in kit if doc["kind"] == "CustomResourceDefinition"]
    assert crds == ["greetings.example.com"]
    assert not [doc for doc in kit if doc["kind"].endswith("WebhookConfiguration")]
    (role,) = [doc for doc in kit if doc["kind"] == "ClusterRole" and doc["metadata"]["name"]
               == "kubetrio-manager-role"]  # fmt: skip
    # The greetings, their ConfigMaps and Events (core), nothing of the machine kinds.
    assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {"", "example.com"}
    (deployment,) = [doc for doc in kit if doc["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][-1] == "--controllers=greeter"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == SERVICE_ACCOUNT

    kubectl = kubectl_for(server, tmp_path)
    kit = [doc for doc in kit if doc["kind"] != "ServiceMonitor"]  # no prometheus-operator here
    code, out, err = await kubetrio(
        "manifests", "--controllers", "greeter", "--no-servicemonitor",
        "--check", "--kubeconfig", str(server.kubeconfig), env=env,
    )  # fmt: skip
    assert code == 0, out + err
    await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(kit).encode())
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    token = (await kubectl.out("create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE)).strip()
    kubeconfig = server.kubeconfig_of(token, tmp_path / "sa.kubeconfig")

    args = [a for a in container["args"] if not a.startswith(BIND_FLAGS)]
    greeting = str(project / "greeting.yaml")
    async with manager_process(kubeconfig, tmp_path / "manager.log", *args, env=env):
        await kubectl.run("apply", "-f", greeting)
        await kubectl.run("wait", "greeting/world", "--for=condition=Ready", "--timeout=60s")
        text = await kubectl.out("get", "configmap", "world", "-o", "jsonpath={.data.greeting}")
        assert text == "Hi, World! Hi, World! Hi, World!"
        # The finalizer is the manager's to remove: the delete returns once it has.
        await kubectl.run("delete", "-f", greeting, "--timeout=60s")
    log = (tmp_path / "manager.log").read_text()

    made, denied = refused(server.audit, SA_USER)
    print(
        f"\n{server.name}: {made} requests by {SA_USER}, {len(denied)} refused, "
        f"{time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    assert made > 10, log
    assert denied == [], log
