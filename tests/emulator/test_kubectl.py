"""kubectl 1.33, unchanged, against the emulator, as a user would use it (real clock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import yaml

from kubetrio.emulator import Emulator
from tests.helpers.kube import Kubectl

pytestmark = pytest.mark.kubectl

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def widget(name: str, size: int, tier: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"tier": tier}},
        "spec": {"size": size},
    }


def pod(
    name: str, node: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if node:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": body,
    }


async def test_apply_crd_and_custom_objects(kubectl: Kubectl) -> None:
    assert "created" in await kubectl.apply([CRD])
    out = await kubectl.apply([widget("w1", 3, "a"), widget("w2", 5, "b")])
    assert "widget.example.com/w1 created" in out
    table = await kubectl.out("get", "wd")
    lines = table.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "AGE"]
    assert lines[1].split()[:2] == ["w1", "3"]
    assert len(lines) == 3
    selected = await kubectl.json("get", "widgets", "-l", "tier=a")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["w1"]
    by_field = await kubectl.out(
        "get", "widgets", "--field-selector", "metadata.name=w2", "-o", "name"
    )
    assert by_field.strip() == "widget.example.com/w2"
    # Re-apply with a change: a merge patch for custom resources; generation moves with spec.
    out = await kubectl.apply([widget("w1", 3, "a"), widget("w2", 7, "b")])
    assert "widget.example.com/w1 unchanged" in out
    assert "widget.example.com/w2 configured" in out
    w2 = await kubectl.json("get", "widget", "w2")
    assert w2["spec"]["size"] == 7
    assert w2["metadata"]["generation"] == 2
    bad = await kubectl.run("get", "pods", "--field-selector", "spec.nope=x", check=False)
    assert bad.returncode != 0
    assert b"field label not supported: spec.nope" in bad.stderr


async def _read_until(stream: trio.abc.ReceiveStream, buf: bytearray, needle: str) -> None:
    """Read a subprocess's output until a line contains all words of ``needle``."""
    words = needle.split()
    while not any(all(w in line for w in words) for line in buf.decode().splitlines()):
        data = await stream.receive_some(4096)
        assert data, f"output ended before {needle!r}:\n{buf.decode()}"
        buf += data


async def test_get_watch_sees_changes(kubectl: Kubectl, emu: Emulator) -> None:
    await kubectl.apply([pod("watched", labels={"app": "x"})])
    proc = await trio.lowlevel.open_process(
        [kubectl.binary, "get", "pods", "-w", "--output-watch-events"], stdout=-1, env=kubectl.env
    )
    try:
        assert proc.stdout is not None
        buf = bytearray()
        with trio.fail_after(20):
            await _read_until(proc.stdout, buf, "ADDED watched")
            await kubectl.run("label", "pod", "watched", "color=blue")
            await _read_until(proc.stdout, buf, "MODIFIED watched")
            await kubectl.apply([pod("second")])
            await _read_until(proc.stdout, buf, "ADDED second")
            await kubectl.run("delete", "pod", "second")
            await _read_until(proc.stdout, buf, "DELETED second")
        assert buf.decode().splitlines()[0].split()[:2] == ["EVENT", "NAME"]
    finally:
        proc.kill()
        await proc.wait()


async def test_label_annotate_patch(kubectl: Kubectl, emu: Emulator) -> None:
    await kubectl.apply([pod("p1", labels={"app": "web"})])
    await kubectl.run("label", "pod", "p1", "color=red")
    await kubectl.run("annotate", "pod", "p1", "note=hello")
    await kubectl.run(
        "patch", "pod", "p1", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    await kubectl.run(
        "patch",
        "pod",
        "p1",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )
    await kubectl.run(
        "patch",
        "pod",
        "p1",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}',
    )
    p = await kubectl.json("get", "pod", "p1")
    assert p["metadata"]["labels"] == {"app": "web", "color": "red", "m": "1", "j": "2"}
    assert p["metadata"]["annotations"]["note"] == "hello"
    # Merged by name: one container, its image replaced, API defaults (set at create) kept.
    [container] = p["spec"]["containers"]
    assert (container["name"], container["image"]) == ("c", "busybox:2")
    assert container["terminationMessagePath"] == "/dev/termination-log"
    failed = await kubectl.run(
        "patch",
        "pod",
        "p1",
        "--type",
        "json",
        "-p",
        '[{"op":"test","path":"/metadata/labels/j","value":"9"}]',
        check=False,
    )
    assert failed.returncode != 0
    assert b"test failed" in failed.stderr
    shown = await kubectl.out("get", "pod", "p1", "--show-labels")
    assert "color=red" in shown


async def test_cordon_uncordon(kubectl: Kubectl, emu: Emulator) -> None:
    await kubectl.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
            }
        ]
    )
    # Admission taints a new Node not-ready; no lifecycle controller runs here to lift it.
    taints = [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    ]
    await kubectl.run("cordon", "n1")
    node = await kubectl.json("get", "node", "n1")
    assert node["spec"]["unschedulable"] is True
    # kubectl only sets spec.unschedulable; the node.kubernetes.io/unschedulable taint comes
    # from the node lifecycle controller, which the bare API server does not run.
    assert node["spec"]["taints"] == taints
    assert "SchedulingDisabled" in await kubectl.out("get", "nodes")
    await kubectl.run("uncordon", "n1")
    node = await kubectl.json("get", "node", "n1")
    assert "unschedulable" not in node["spec"]
    assert node["spec"]["taints"] == taints


@pytest.mark.slow
async def test_delete_with_finalizer_and_wait(kubectl: Kubectl, emu: Emulator) -> None:
    await kubectl.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "held", "finalizers": ["example.com/keep"]},
                "data": {"a": "1"},
            }
        ]
    )
    await kubectl.run("delete", "configmap", "held", "--wait=false")
    cm = await kubectl.json("get", "configmap", "held")
    assert cm["metadata"]["deletionTimestamp"]
    async with trio.open_nursery() as nursery:
        result: list[int] = []

        async def wait_for_delete() -> None:
            proc = await kubectl.run(
                "wait", "--for=delete", "configmap/held", "--timeout=30s", check=False
            )
            result.append(proc.returncode)

        nursery.start_soon(wait_for_delete)
        added = await kubectl.run(
            "patch",
            "configmap",
            "held",
            "--type",
            "merge",
            "-p",
            '{"metadata":{"finalizers":["example.com/keep","example.com/more"]}}',
            check=False,
        )
        assert added.returncode != 0
        assert b"no new finalizers can be added" in added.stderr
        await kubectl.run(
            "patch",
            "configmap",
            "held",
            "--type",
            "json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
        )
    assert result == [0]
    gone = await kubectl.run("get", "configmap", "held", check=False)
    assert b'configmaps "held" not found' in gone.stderr


@pytest.mark.slow
async def test_drain_blocked_by_pdb_until_budget_allows(kubectl: Kubectl, emu: Emulator) -> None:
    await kubectl.apply(
        [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            pod("db-0", node="n1", labels={"app": "db"}, terminationGracePeriodSeconds=0),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "db", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
            },
        ]
    )
    # What the kubelet and the disruption controller would report.
    emu.set_status(
        "v1",
        "Pod",
        "db-0",
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        "default",
    )
    emu.set_status(
        "policy/v1",
        "PodDisruptionBudget",
        "db",
        {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
        "default",
    )
    proc = await trio.lowlevel.open_process(
        [
            kubectl.binary,
            "drain",
            "n1",
            "--force",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=40s",
        ],
        stdout=-1,
        stderr=-2,
        env=kubectl.env,
    )
    assert proc.stdout is not None
    buf = b""
    with trio.fail_after(40):
        while b"disruption budget" not in buf:
            data = await proc.stdout.receive_some(4096)
            assert data, buf.decode()
            buf += data
        assert emu.get("v1", "Pod", "db-0", "default") is not None  # blocked
        pdb = emu.get("policy/v1", "PodDisruptionBudget", "db", "default")
        assert pdb is not None
        pdb["status"]["disruptionsAllowed"] = 1
        emu.update(pdb, subresource="status")
        while True:
            data = await proc.stdout.receive_some(4096)
            if not data:
                break
            buf += data
        rc = await proc.wait()
    text = buf.decode()
    assert rc == 0, text
    assert "Cannot evict pod as it would violate the pod's disruption budget." in text
    assert "pod/db-0 evicted" in text
    assert "node/n1 drained" in text
    assert emu.get("v1", "Pod", "db-0", "default") is None
    pdb = emu.get("policy/v1", "PodDisruptionBudget", "db", "default")
    assert pdb is not None
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert "db-0" in pdb["status"]["disruptedPods"]
    node = emu.get("v1", "Node", "n1")
    assert node is not None and node["spec"]["unschedulable"] is True


async def test_reapply_builtin_uses_strategic_merge(kubectl: Kubectl, emu: Emulator) -> None:
    deploy: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                        {"name": "sidecar", "image": "envoy:1"},
                    ]
                },
            },
        },
    }
    assert "deployment.apps/web created" in await kubectl.apply([deploy])
    containers = deploy["spec"]["template"]["spec"]["containers"]
    containers[0]["image"] = "nginx:2"
    del containers[1]  # dropped from the manifest: kubectl sends $patch: delete for it
    deploy["spec"]["replicas"] = 3
    assert "deployment.apps/web configured" in await kubectl.apply([deploy])
    live = await kubectl.json("get", "deployment", "web")
    assert live["spec"]["replicas"] == 3
    assert [(c["name"], c["image"]) for c in live["spec"]["template"]["spec"]["containers"]] == [
        ("main", "nginx:2")
    ]
    assert live["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    assert live["metadata"]["generation"] == 2
    assert "deployment.apps/web unchanged" in await kubectl.apply([deploy])


async def test_server_side_apply(kubectl: Kubectl, emu: Emulator) -> None:
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": "default"},
        "data": {"a": "1"},
    }
    text = yaml.safe_dump(cm).encode()
    out = await kubectl.run("apply", "--server-side", "-f", "-", stdin=text)
    assert b"configmap/ssa serverside-applied" in out.stdout
    cm["data"]["b"] = "2"
    await kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(cm).encode())
    live = await kubectl.json("get", "configmap", "ssa")
    assert live["data"] == {"a": "1", "b": "2"}
