"""What a new Pod gets on its way in, and the pod-only subresources, as the fast loop sees
them (tests/conformance compares the same answers with a real kube-apiserver): the
ServiceAccount token volume in every container, priority from a PriorityClass, the default
NoExecute tolerations, the QoS class, refusals naming what is missing, a binding's
PodScheduled condition, and the ephemeralcontainers and resize views."""

from __future__ import annotations

from typing import Any

import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient

PODS = "/api/v1/namespaces/default/pods"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
SMP = "application/strategic-merge-patch+json"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


async def test_a_new_pod_gets_what_the_admission_plugins_add(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.request("POST", PODS, pod("p", initContainers=[{"name": "i", "image": "x"}]))
    assert r.status == 201, r.body
    spec, status = r.json()["spec"], r.json()["status"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    for c in spec["containers"] + spec["initContainers"]:
        assert c["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_PATH}
        ]
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert status == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_priority_and_qos_follow_the_pod(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        }
    )
    limited = {"name": "c", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
    r = await client.request("POST", PODS, pod("p", priorityClassName="high", containers=[limited]))
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert r.json()["status"]["qosClass"] == "Guaranteed"


async def test_admission_refusals_name_what_is_missing(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.request("POST", PODS, pod("p", serviceAccountName="robot"))
    assert r.status == 403
    assert 'serviceaccount "robot" not found' in r.json()["message"]
    r = await client.request("POST", PODS, pod("p", priorityClassName="nope"))
    assert r.status == 403
    assert "no PriorityClass with name nope was found" in r.json()["message"]
    r = await client.request("POST", PODS, pod("p", priority=7))
    assert r.status == 403
    assert "the integer value of priority (7) must not be provided" in r.json()["message"]


async def test_spec_rules_and_the_few_mutable_fields(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.request("POST", PODS, pod("p", containers=[{"name": "C_1"}]))
    assert r.status == 422
    assert [c["field"] for c in r.json()["details"]["causes"]] == [
        "spec.containers[0].name",
        "spec.containers[0].image",
    ]
    assert (await client.request("POST", PODS, pod("p"))).status == 201
    image = {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}
    r = await client.request("PATCH", f"{PODS}/p", image, content_type=SMP)
    assert r.status == 200, r.body
    command = {"spec": {"containers": [{"name": "c", "command": ["sh"]}]}}
    r = await client.request("PATCH", f"{PODS}/p", command, content_type=SMP)
    assert r.status == 422
    assert "pod updates may not change fields other than" in r.json()["message"]
    assert '+    "sh"' in r.json()["message"]


async def test_binding_ephemeral_containers_and_resize(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    limited = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    assert (await client.request("POST", PODS, pod("p", containers=[limited]))).status == 201
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert (await client.request("POST", f"{PODS}/p/binding", binding)).status == 201
    bound = (await client.get(f"{PODS}/p")).json()
    assert bound["spec"]["nodeName"] == "n1" and bound["metadata"]["generation"] == 1
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]

    debug = {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}
    r = await client.request("PATCH", f"{PODS}/p/ephemeralcontainers", debug, content_type=SMP)
    assert r.status == 200, r.body
    assert [c["name"] for c in r.json()["spec"]["ephemeralContainers"]] == ["dbg"]
    changed = {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "other"}]}}
    r = await client.request("PATCH", f"{PODS}/p/ephemeralcontainers", changed, content_type=SMP)
    assert r.status == 422
    assert 'existing ephemeral containers "dbg" may not be changed' in r.json()["message"]

    resize = {
        "spec": {
            "containers": [{"name": "c", "image": "y", "resources": {"requests": {"cpu": "2"}}}]
        }
    }
    r = await client.request("PATCH", f"{PODS}/p/resize", resize, content_type=SMP)
    assert r.status == 200, r.body
    container = r.json()["spec"]["containers"][0]
    assert (container["image"], container["resources"]) == ("x", {"requests": {"cpu": "2"}})
    dropped = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": None}}}]}}
    r = await client.request("PATCH", f"{PODS}/p/resize", dropped, content_type=SMP)
    assert r.status == 422
    assert "Pod QOS Class may not change as a result of resizing" in r.json()["message"]
