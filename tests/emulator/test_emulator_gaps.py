"""The emulator's table of gaps (emulator/gaps.py) tells the truth.

Each row with a probe is checked here as a user would meet it: the unsupported feature answers
with a clear Status (never a hang or a 500), or visibly does nothing. When someone closes a gap,
its probe fails until the row is changed, so the documentation site (which generates its gaps
page from the table) and ``--help`` never drift.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.cmd.main import build_parser
from kubetrio.emulator import Emulator
from kubetrio.emulator.gaps import GAPS
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.kube import Kubectl

GAPS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "emulator-gaps.md"
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


async def streaming_subresources(client: EmuClient, emu: Emulator) -> None:
    assert (await client.request("POST", PODS, pod("p"))).status == 201
    for method, path in [
        ("GET", f"{PODS}/p/log"),
        ("POST", f"{PODS}/p/exec?command=ls&stdout=true"),
        ("POST", f"{PODS}/p/attach?stdout=true"),
        ("POST", f"{PODS}/p/portforward?ports=80"),
        ("GET", f"{PODS}/p/proxy"),
        ("GET", "/api/v1/namespaces/default/services/s/proxy"),
        ("GET", "/api/v1/nodes/n/proxy"),
    ]:
        r = await client.request(method, path)
        assert r.status == 501, (path, r.status)
        status = r.json()
        assert status["kind"] == "Status" and status["code"] == 501
        assert "does not serve" in status["message"], status


async def admission_webhooks(client: EmuClient, emu: Emulator) -> None:
    r = await client.get("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies")
    assert r.status == 404 and r.json()["reason"] == "NotFound"
    # Webhook configurations are served (test_admission_webhooks.py); a service reference
    # is stored but cannot be called: the write fails as a webhook that cannot be reached.
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "by-service"},
        "webhooks": [
            {
                "name": "by-service.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"namespace": "default", "name": "hook"}},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
            }
        ],
    }
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    assert (await client.request("POST", path, config)).status == 201
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    r = await client.request("POST", "/api/v1/namespaces/default/configmaps", cm)
    assert r.status == 500, r.body
    assert "cannot reach in-cluster service" in r.json()["message"]


async def quota_not_enforced(client: EmuClient, emu: Emulator) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "none", "namespace": "default"},
        "spec": {"hard": {"pods": "0"}},
    }
    r = await client.request("POST", "/api/v1/namespaces/default/resourcequotas", quota)
    assert r.status == 201, r.body
    # A cluster answers 403 "exceeded quota"; here the pod is created.
    assert (await client.request("POST", PODS, pod("over-quota"))).status == 201


async def own_writes_unmanaged(client: EmuClient, emu: Emulator) -> None:
    # A cluster's default namespace carries kube-apiserver's Update entry.
    namespace = (await client.get("/api/v1/namespaces/default")).json()
    assert "managedFields" not in namespace["metadata"]


async def cel_untyped(client: EmuClient, emu: Emulator) -> None:
    # A cluster refuses this CRD (int + string does not type-check); here it is stored.
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.size + 'a' == 'b'"}],
                }
            },
        }
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }
    r = await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert r.status == 201, r.body


async def yaml_as_json(client: EmuClient, emu: Emulator) -> None:
    r = await client.get("/api/v1/namespaces/default", headers={"Accept": "application/yaml"})
    assert r.status == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["metadata"]["name"] == "default"


async def aggregation(client: EmuClient, emu: Emulator) -> None:
    r = await client.get("/apis/apiregistration.k8s.io/v1/apiservices")
    assert r.status == 404 and r.json()["reason"] == "NotFound"
    # Priority and fairness objects are kept, and nothing reads them.
    r = await client.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
    assert r.status == 200 and r.json()["items"] == []


async def jobs_not_run(client: EmuClient, emu: Emulator) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    r = await client.request("POST", "/apis/batch/v1/namespaces/default/jobs", job)
    assert r.status == 201, r.body
    await trio.sleep(120)  # simulated time: a job controller would have made a pod by now
    pods = (await client.get(f"{PODS}?labelSelector=job-name%3Donce")).json()["items"]
    assert pods == []


PROBES: dict[str, Callable[[EmuClient, Emulator], Awaitable[None]]] = {
    "streaming-subresources": streaming_subresources,
    "admission-webhooks": admission_webhooks,
    "quota-not-enforced": quota_not_enforced,
    "own-writes-unmanaged": own_writes_unmanaged,
    "cel-untyped": cel_untyped,
    "yaml-as-json": yaml_as_json,
    "aggregation": aggregation,
    "jobs-not-run": jobs_not_run,
}


def test_every_probed_row_has_its_probe() -> None:
    assert {g.probe for g in GAPS if g.probe} == set(PROBES)


@pytest.mark.parametrize("probe", sorted(PROBES))
async def test_gap_behaves_as_the_table_says(
    probe: str, client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await PROBES[probe](client, emu)


def test_the_site_and_help_show_the_table() -> None:
    # The site's build fills the marker in with table() (docs/hooks/kubetrio_docs.py; the
    # browser test in tests/packaging/test_docs_site.py finds a row there).
    assert "\n<!-- emulator-gaps -->\n" in GAPS_PAGE.read_text(), "the gaps page lost its table"
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["emulator"]  # type: ignore[union-attr]
    help_text = " ".join(sub.format_help().split())
    for g in GAPS:
        assert " ".join(g.feature.split()) in help_text


@pytest.mark.kubectl
async def test_kubectl_logs_names_the_gap(kubectl: Kubectl, client: EmuClient) -> None:
    assert (await client.request("POST", PODS, pod("logs"))).status == 201
    proc = await kubectl.run("logs", "logs", check=False)
    assert proc.returncode != 0
    assert "does not serve pods/log" in proc.stderr.decode()
