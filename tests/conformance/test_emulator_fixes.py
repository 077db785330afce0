"""Emulator behaviours the conformance corpus found wrong and that were fixed, each held here on
the emulator alone (the corpus holds them against kube-apiserver too)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient

NS = "/api/v1/namespaces/default"
MERGE = "application/merge-patch+json"


def deployment(name: str, **extra: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
        **extra,
    }


async def test_only_kinds_with_a_generation_get_one(
    emulator: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = EmuClient(emulator.url, emulator.token)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    created = (await client.request("POST", f"{NS}/configmaps", cm)).json()
    assert "generation" not in created["metadata"]
    patch = {"data": {"a": "2"}}
    r = await client.request("PATCH", f"{NS}/configmaps/c", patch, content_type=MERGE)
    assert "generation" not in r.json()["metadata"]
    deploy = "/apis/apps/v1/namespaces/default/deployments"
    created = (await client.request("POST", deploy, deployment("d"))).json()
    assert created["metadata"]["generation"] == 1
    patch = {"spec": {"replicas": 3}}
    r = await client.request("PATCH", f"{deploy}/d", patch, content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 2


async def test_a_namespace_carries_its_name_label(
    emulator: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = EmuClient(emulator.url, emulator.token)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {}}}
    created = (await client.request("POST", "/api/v1/namespaces", ns)).json()
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    patch = {"metadata": {"labels": {"kubernetes.io/metadata.name": None, "a": "b"}}}
    r = await client.request("PATCH", "/api/v1/namespaces/team", patch, content_type=MERGE)
    assert r.json()["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team", "a": "b"}


async def test_enable_service_links_is_a_pod_default_only(
    emulator: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = EmuClient(emulator.url, emulator.token)
    deploy = "/apis/apps/v1/namespaces/default/deployments"
    created = (await client.request("POST", deploy, deployment("d"))).json()
    assert "enableServiceLinks" not in created["spec"]["template"]["spec"]
    assert created["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = (await client.request("POST", f"{NS}/pods", pod)).json()
    assert created["spec"]["enableServiceLinks"] is True


async def test_create_resets_the_status_of_built_ins(
    emulator: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = EmuClient(emulator.url, emulator.token)
    deploy = "/apis/apps/v1/namespaces/default/deployments"
    body = deployment("d", status={"replicas": 5})
    assert (await client.request("POST", deploy, body)).json()["status"] == {}
    rs = {**deployment("r", status={"replicas": 5}), "kind": "ReplicaSet"}
    created = await client.request("POST", "/apis/apps/v1/namespaces/default/replicasets", rs)
    assert created.json()["status"] == {"replicas": 0}
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }
    r = await client.request("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    assert r.json()["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }
    r = await client.request("POST", f"{NS}/persistentvolumeclaims", pvc)
    assert r.json()["status"] == {"phase": "Pending"}


async def test_a_bookmark_comes_two_seconds_before_a_watch_times_out(
    emulator: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    client = EmuClient(emulator.url, emulator.token)
    cms = f"{NS}/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"l": "x"}}}
    rv = (await client.request("POST", cms, cm)).json()["metadata"]["resourceVersion"]
    query = (
        "watch=1&allowWatchBookmarks=true&labelSelector=l%3Dx&timeoutSeconds=5"
        f"&resourceVersion={rv}"
    )
    # Nothing newer than the watch's position: no bookmark before the end.
    async with client.watch(f"{cms}?{query}") as stream:
        assert await stream.next() is None
    # A write the watch does not show moves the server on: one bookmark, 2 s before the end.
    async with client.watch(f"{cms}?{query}") as stream:
        other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}
        await client.request("POST", cms, other)
        started = trio.current_time()
        event = await stream.next()
        assert event is not None and event["type"] == "BOOKMARK"
        assert trio.current_time() - started == pytest.approx(3)
        assert await stream.next() is None
