"""The deployment kit against the emulator with real kubectl (1.27 and 1.33: their kustomize
versions differ): ``kubetrio crds | kubectl apply -f -`` installs the CRDs; ``kubetrio
manifests`` is what ``kubectl kustomize config/default`` renders, object by object, and our
namespace transform is kustomize's on the cases it has; ``kubectl apply --dry-run=server -k
config/default`` passes and creates nothing, then the real apply creates the objects kubectl
reads back as written."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from kubetrio.cmd.kustomize import render
from kubetrio.cmd.webhooks import CERT_DIR
from kubetrio.emulator import Emulator
from tests.helpers.kube import Kubectl, kubectl_of

pytestmark = pytest.mark.kubectl

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "config"
SERVICE_MONITOR_CRD = (
    Path(__file__).parent / "fixtures" / "monitoring.coreos.com_servicemonitors.yaml"
)
CERT_MANAGER_CRDS = Path(__file__).parent / "fixtures" / "cert-manager.io_crds.yaml"
VERSIONS = ["1.27", "1.33"]
NS = "kubetrio-system"


async def kubetrio(*args: str) -> bytes:
    """The CLI as a user runs it (a separate process), its standard output."""
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-m", "kubetrio.cmd.main", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def documents(text: bytes | str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


@pytest.mark.process
@pytest.mark.slow
async def test_crds_pipe_into_kubectl_apply(emu: Emulator, kubectl: Kubectl) -> None:
    stream = await kubetrio("crds")
    out = (await kubectl.run("apply", "-f", "-", stdin=stream)).stdout.decode()
    assert out.count("created") == 4, out
    names = (await kubectl.out("get", "crd", "-o", "name")).split()
    assert sorted(names) == [
        f"customresourcedefinition.apiextensions.k8s.io/{kind}.machine.sapcloud.io"
        for kind in ("machineclasses", "machinedeployments", "machines", "machinesets")
    ]
    # Served: the kinds are listed (empty), and applying again changes nothing.
    assert "No resources found" in (await kubectl.run("get", "machines", "-A")).stderr.decode()
    again = (await kubectl.run("apply", "-f", "-", stdin=stream)).stdout.decode()
    assert again.count("unchanged") == 4, again


@pytest.mark.process
@pytest.mark.slow
async def test_manifests_without_the_servicemonitor_apply_where_there_is_no_operator(
    emu: Emulator, kubectl: Kubectl
) -> None:
    """A cluster without prometheus-operator refuses the ServiceMonitor, one without
    cert-manager the Certificate and Issuer (kubectl exits 1 after applying the rest);
    ``--no-servicemonitor`` leaves exactly the first out; the webhooks' objects come only with
    ``--webhooks``, with the Deployment's webhook arguments, port and certificate volume."""
    full = documents(await kubetrio("manifests"))
    no_monitor = documents(await kubetrio("manifests", "--no-servicemonitor"))
    assert no_monitor == [doc for doc in full if doc["kind"] != "ServiceMonitor"]
    hooked = documents(await kubetrio("manifests", "--no-servicemonitor", "--webhooks"))
    added = {identity(doc) for doc in hooked} - {identity(d) for d in no_monitor}
    assert added == {
        f"Certificate/{NS}/kubetrio-serving-cert",
        f"Issuer/{NS}/kubetrio-selfsigned-issuer",
        f"Service/{NS}/kubetrio-webhook-service",
        "MutatingWebhookConfiguration//kubetrio-mutating-webhook-configuration",
        "ValidatingWebhookConfiguration//kubetrio-validating-webhook-configuration",
    }
    (deployment,) = [doc for doc in no_monitor if doc["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert not [a for a in container["args"] if a.startswith("--webhook")]
    assert [p["name"] for p in container["ports"]] == ["metrics", "health"]
    assert [v["name"] for v in pod["volumes"]] == ["tmp"]
    assert [m["name"] for m in container["volumeMounts"]] == ["tmp"]
    (served,) = [doc for doc in hooked if doc["kind"] == "Deployment"]
    pod = served["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][-2:] == ["--webhooks", f"--webhook-cert-path={CERT_DIR}"]
    assert [p["name"] for p in container["ports"]] == ["metrics", "health", "webhook-server"]
    assert [v["name"] for v in pod["volumes"]] == ["tmp", "webhook-certs"]
    refused = await kubectl.run("apply", "-f", "-", stdin=dump(hooked), check=False)
    assert refused.returncode == 1 and b"ServiceMonitor" not in refused.stderr
    assert b"Certificate" in refused.stderr and b"Issuer" in refused.stderr
    refused = await kubectl.run("apply", "-f", "-", stdin=dump(full), check=False)
    assert refused.returncode == 1 and b"ServiceMonitor" in refused.stderr
    assert b"Certificate" not in refused.stderr


def dump(docs: list[dict[str, Any]]) -> bytes:
    return yaml.safe_dump_all(docs).encode()


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
async def test_manifests_are_what_kubectl_kustomize_renders(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    kubectl = kubectl_of(version, emu, tmp_path)
    theirs = documents(await kubectl.out("kustomize", str(KIT / "default")))
    ours = documents(await kubetrio("manifests"))
    assert ours == theirs
    # The overlay with the webhooks, its JSON patch of the Deployment included.
    theirs = documents(await kubectl.out("kustomize", str(KIT / "with-webhooks")))
    ours = documents(await kubetrio("manifests", "--webhooks"))
    assert [identity(doc) for doc in ours] == [identity(doc) for doc in theirs]  # and the order
    for mine, expected in zip(ours, theirs, strict=True):
        assert mine == expected, identity(mine)
    kinds = {doc["kind"] for doc in ours}
    assert kinds == {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "Service",
        "Deployment",
        "ServiceMonitor",
        "Certificate",
        "Issuer",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }


def identity(doc: dict[str, Any]) -> str:
    metadata = doc.get("metadata") or {}
    return f"{doc['kind']}/{metadata.get('namespace', '')}/{metadata.get('name')}"


# Objects for kustomize's namespace transform where it is subtle: a Namespace is renamed, a
# custom kind is namespaced, cluster-scoped kinds are left alone, and a ServiceAccount subject
# follows only a ServiceAccount of the kit (named so, in its old namespace or with none).
TRANSFORM_CASES = """\
apiVersion: v1
kind: Namespace
metadata: {name: system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: manager, namespace: system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bare}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: x}
subjects:
- {kind: ServiceAccount, name: manager, namespace: system}
- {kind: ServiceAccount, name: manager, namespace: default}
- {kind: ServiceAccount, name: manager}
- {kind: ServiceAccount, name: bare, namespace: default}
- {kind: ServiceAccount, name: stranger, namespace: system}
- {kind: User, name: someone, namespace: system}
- {kind: Group, name: people}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local, namespace: elsewhere}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: x}
subjects:
- {kind: ServiceAccount, name: manager, namespace: system}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: gadget}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


@pytest.mark.parametrize("version", VERSIONS)
async def test_namespace_transform_is_kustomizes(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    kit = tmp_path / "kit"
    (kit / "base").mkdir(parents=True)
    (kit / "overlay").mkdir()
    (kit / "base" / "objects.yaml").write_text(TRANSFORM_CASES)
    (kit / "base" / "kustomization.yaml").write_text("resources:\n- objects.yaml\n")
    (kit / "overlay" / "kustomization.yaml").write_text("namespace: moved\nresources:\n- ../base\n")
    kubectl = kubectl_of(version, emu, tmp_path)
    theirs = documents(await kubectl.out("kustomize", str(kit / "overlay")))
    ours = render(kit, "overlay")
    assert ours == theirs


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
async def test_kit_passes_a_server_dry_run_then_applies(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    kubectl = kubectl_of(version, emu, tmp_path)
    # A cluster running prometheus-operator has its ServiceMonitor CRD.
    await kubectl.run("apply", "-f", str(SERVICE_MONITOR_CRD))
    # And one running cert-manager its Certificate and Issuer CRDs.
    await kubectl.run("apply", "-f", str(CERT_MANAGER_CRDS))
    # A server dry run cannot put objects into a namespace it only pretends to create
    # (kube-apiserver answers NotFound, kubernetes/kubernetes#83562): the namespace comes first.
    await kubectl.run("create", "namespace", NS)
    kit = str(KIT / "with-webhooks")
    dry = (await kubectl.run("apply", "--dry-run=server", "-k", kit)).stdout
    lines = dry.decode().splitlines()
    assert len(lines) == len(render(KIT, "with-webhooks")), dry.decode()
    assert all(line.endswith("(server dry run)") for line in lines), dry.decode()
    nothing = await kubectl.run("get", "deployments,serviceaccounts,services", "-n", NS)
    assert b"kubetrio-controller-manager" not in nothing.stdout
    assert b"machines.machine.sapcloud.io" not in (await kubectl.run("get", "crd")).stdout

    applied = (await kubectl.run("apply", "-k", kit)).stdout.decode()
    assert "deployment.apps/kubetrio-controller-manager created" in applied, applied

    deployment = await kubectl.json("get", "deployment", "kubetrio-controller-manager", "-n", NS)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == "manager"
    assert container["command"] == ["kubetrio", "run"]
    assert container["args"] == [
        "--leader-elect",
        f"--leader-election-namespace={NS}",
        "--metrics-bind-address=:8443",
        "--metrics-secure",
        "--health-probe-bind-address=:8081",
        "--webhooks",
        "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
    ]
    assert pod["serviceAccountName"] == "kubetrio-controller-manager"
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": 8081, "scheme": "HTTP"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        # Filled in by the server, as kube-apiserver's SetDefaults_Probe does.
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert {p["containerPort"] for p in container["ports"]} == {8443, 8081, 9443}
    assert set(container["resources"]) == {"requests", "limits"}
    assert {v["name"]: v["mountPath"] for v in container["volumeMounts"]} == {
        "tmp": "/tmp",
        "webhook-certs": "/tmp/k8s-webhook-server/serving-certs",
    }
    certs = next(v for v in pod["volumes"] if v["name"] == "webhook-certs")
    assert certs["secret"]["secretName"] == "webhook-server-cert"
    certificate = await kubectl.json("get", "certificate", "kubetrio-serving-cert", "-n", NS)
    assert certificate["spec"]["secretName"] == "webhook-server-cert"
    webhook_service = await kubectl.json("get", "service", "kubetrio-webhook-service", "-n", NS)
    assert webhook_service["spec"]["ports"][0]["targetPort"] == "webhook-server"
    assert webhook_service["spec"]["selector"] == {"control-plane": "controller-manager"}
    validating = await kubectl.json(
        "get", "validatingwebhookconfiguration", "kubetrio-validating-webhook-configuration"
    )
    annotations = validating["metadata"]["annotations"]
    assert annotations["cert-manager.io/inject-ca-from"] == f"{NS}/kubetrio-serving-cert"
    assert {h["clientConfig"]["service"]["name"] for h in validating["webhooks"]} == {
        "kubetrio-webhook-service"
    }

    binding = await kubectl.json("get", "clusterrolebinding", "kubetrio-manager-rolebinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kubetrio-controller-manager", "namespace": NS}
    ]
    role = await kubectl.json("get", "role", "kubetrio-leader-election-role", "-n", NS)
    # Leases only: the manager's events are allowed by kubetrio-manager-role in every namespace,
    # so an events rule here would never be used (test_rbac_exact fails any unused rule).
    assert {"leases"} == {r for rule in role["rules"] for r in rule["resources"]}
    service = await kubectl.json(
        "get", "service", "kubetrio-controller-manager-metrics-service", "-n", NS
    )
    assert service["spec"]["ports"][0]["name"] == "https"
    assert service["spec"]["ports"][0]["port"] == 8443
    monitor = await kubectl.json(
        "get", "servicemonitor", "kubetrio-controller-manager-metrics-monitor", "-n", NS
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["port"] == "https"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]

    # Applying what `kubetrio manifests --webhooks` prints on top changes nothing.
    again = await kubectl.run("apply", "-f", "-", stdin=await kubetrio("manifests", "--webhooks"))
    assert all(line.endswith("unchanged") for line in again.stdout.decode().splitlines()), (
        again.stdout.decode()
    )


def relative(path: Path, start: Path) -> str:
    """``path`` from ``start``: kustomize refuses an absolute path to a base."""
    return os.path.relpath(path, start)


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
async def test_manifests_image_is_kustomize_edit_set_image(
    version: str, emu: Emulator, tmp_path: Path
) -> None:
    """``kubetrio manifests --image REF`` renders what an overlay of config/default with the
    ``images`` entry ``kustomize edit set image kubetrio=REF`` writes renders with kubectl."""
    kubectl = kubectl_of(version, emu, tmp_path)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    base = relative(KIT / "default", overlay)
    digest = "sha256:" + "0" * 64
    # reference -> (the images entry, the manager's image it gives)
    cases = {
        "ghcr.io/acme/kubetrio:0.1.0": (
            "{name: kubetrio, newName: ghcr.io/acme/kubetrio, newTag: 0.1.0}",
            "ghcr.io/acme/kubetrio:0.1.0",
        ),
        "localhost:5000/kubetrio": (
            "{name: kubetrio, newName: localhost:5000/kubetrio}",
            "localhost:5000/kubetrio:latest",  # no tag given: the kit's stays
        ),
        f"registry.example/kt@{digest}": (
            f"{{name: kubetrio, newName: registry.example/kt, digest: '{digest}'}}",
            f"registry.example/kt@{digest}",
        ),
    }
    for reference, (entry, image) in cases.items():
        kustomization = f"resources:\n- {base}\nimages:\n- {entry}\n"
        (overlay / "kustomization.yaml").write_text(kustomization)
        theirs = documents(await kubectl.out("kustomize", str(overlay)))
        ours = documents(await kubetrio("manifests", "--image", reference))
        assert ours == theirs, reference
        (deployment,) = [doc for doc in ours if doc["kind"] == "Deployment"]
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == image
