"""Built-in kinds read back with the defaults kube-apiserver fills in, and Services with their
allocated cluster IP and node ports (emulator/defaults.py, services.py)."""

from __future__ import annotations

import ipaddress
from typing import Any

import trio
import trio.testing

from kubetrio.emulator.testclient import EmuClient

SVCS = "/api/v1/namespaces/default/services"


def service(name: str, type_: str = "ClusterIP", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": type_, "ports": [{"port": 80}], **spec}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


async def test_every_cluster_has_the_kubernetes_service(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    svc = (await client.get(f"{SVCS}/kubernetes")).json()
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"][0]["port"] == 443


async def test_services_get_cluster_ips_and_node_ports(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.request("POST", SVCS, service("web", "NodePort"))
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    port = spec["ports"][0]
    assert port["protocol"] == "TCP" and port["targetPort"] == 80
    assert 30000 <= port["nodePort"] <= 32767
    assert spec["sessionAffinity"] == "None"
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"

    # Taken values are refused as the registry refuses them.
    taken = service("copy", "NodePort", clusterIP=spec["clusterIP"])
    r = await client.request("POST", SVCS, taken)
    assert r.status == 422
    assert "provided IP is already allocated" in r.json()["message"]
    clash = service("clash", "NodePort")
    clash["spec"]["ports"][0]["nodePort"] = port["nodePort"]
    r = await client.request("POST", SVCS, clash)
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    out_of_range = service("far", "NodePort")
    out_of_range["spec"]["ports"][0]["nodePort"] = 80
    r = await client.request("POST", SVCS, out_of_range)
    assert r.status == 422 and "valid range" in r.json()["message"]

    # A PUT that omits the allocated values keeps them.
    current = (await client.get(f"{SVCS}/web")).json()
    current["spec"].pop("clusterIP")
    current["spec"].pop("clusterIPs")
    current["spec"]["ports"][0].pop("nodePort")
    r = await client.request("PUT", f"{SVCS}/web", current)
    assert r.status == 200, r.body
    assert r.json()["spec"]["clusterIP"] == spec["clusterIP"]
    assert r.json()["spec"]["ports"][0]["nodePort"] == port["nodePort"]

    headless = await client.request("POST", SVCS, service("headless", clusterIP="None"))
    assert headless.json()["spec"]["clusterIPs"] == ["None"]
    external = service("ext", "ExternalName", externalName="example.com")
    external["spec"].pop("ports")
    r = await client.request("POST", SVCS, external)
    assert r.status == 201 and "clusterIP" not in r.json()["spec"]
    missing = service("ext2", "ExternalName")
    r = await client.request("POST", SVCS, missing)
    assert r.status == 422 and r.json()["details"]["causes"][0]["field"] == "spec.externalName"


async def test_workloads_read_back_with_their_defaults(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template},
    }
    r = await client.request("POST", "/apis/apps/v1/namespaces/default/deployments", deploy)
    spec = r.json()["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Always"  # untagged image
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert spec["template"]["spec"]["restartPolicy"] == "Always"

    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36"}],
                }
            }
        },
    }
    r = await client.request("POST", "/apis/batch/v1/namespaces/default/jobs", job)
    created = r.json()
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["job-name"] == "j" and labels["controller-uid"] == uid
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # given values stay
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    r = await client.request("POST", "/api/v1/namespaces/default/secrets", secret)
    assert r.json()["type"] == "Opaque"


async def test_probes_read_back_with_their_defaults(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    """SetDefaults_Probe and SetDefaults_HTTPGetAction: what `kubectl get -o yaml` shows of
    a probe that set only its handler."""
    container = {
        "name": "app",
        "image": "app:1",
        "livenessProbe": {"httpGet": {"port": 8081}},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}, "periodSeconds": 5},
        "startupProbe": {"tcpSocket": {"port": 8081}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probed", "namespace": "default"},
        "spec": {"containers": [container]},
    }
    r = await client.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert r.status == 201, r.body
    (read,) = r.json()["spec"]["containers"]
    assert read["livenessProbe"] == {
        "httpGet": {"port": 8081, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert read["readinessProbe"]["periodSeconds"] == 5  # a given value stays
    assert read["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert read["startupProbe"]["tcpSocket"] == {"port": 8081}
    assert read["startupProbe"]["failureThreshold"] == 3
