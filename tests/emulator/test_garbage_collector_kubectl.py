"""``kubectl delete --cascade`` against the emulator's garbage collector, with kubectl 1.27 and
1.33 (real clock: kubectl is a separate process). Background (the default) takes dependents
away after the owner; foreground shows the owner with its finalizer while a blocking dependent
is held; orphan leaves dependents without the reference; a Deployment of the simulated cluster
takes its ReplicaSet and pods through the collector."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from kubetrio.emulator import Emulator
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import ClusterSimulation
from tests.helpers.gc import cm, cm_of, ref, ref_uids, settle, until
from tests.helpers.kube import Kubectl, kubectl_of

pytestmark = pytest.mark.kubectl

VERSIONS = ("1.27", "1.33")


@pytest.fixture(params=VERSIONS)
def kctl(request: pytest.FixtureRequest, emu: Emulator, tmp_path: Path) -> Kubectl:
    return kubectl_of(request.param, emu, tmp_path)


async def test_cascade_background_is_the_default(emu: Emulator, kctl: Kubectl) -> None:
    owner = emu.create(cm("owner"))
    emu.create(cm("child", ref(owner, True)))
    emu.create(cm("grandchild", ref(emu.get("v1", "ConfigMap", "child", "default") or {})))
    out = await kctl.out("delete", "configmap", "owner")
    assert 'configmap "owner" deleted' in out
    await until(emu, lambda: cm_of(emu, "child") is None and cm_of(emu, "grandchild") is None)
    owner2 = emu.create(cm("owner2"))
    emu.create(cm("child2", ref(owner2)))
    await kctl.run("delete", "configmap", "owner2", "--cascade=background")
    await until(emu, lambda: cm_of(emu, "child2") is None)


@pytest.mark.slow
async def test_cascade_foreground_holds_the_owner_for_a_blocking_dependent(
    emu: Emulator, kctl: Kubectl
) -> None:
    owner = emu.create(cm("owner"))
    emu.create(cm("held", ref(owner, True), finalizers=("example.com/hold",)))
    emu.create(cm("quick", ref(owner, True)))
    await kctl.run("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    await until(emu, lambda: cm_of(emu, "quick") is None)
    await settle(emu)
    seen = await kctl.json("get", "configmap", "owner")
    assert seen["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert seen["metadata"]["deletionTimestamp"]
    held = await kctl.json("get", "configmap", "held")
    assert held["metadata"]["deletionTimestamp"]
    async with trio.open_nursery() as nursery:
        waited: list[int] = []

        async def wait_for_owner() -> None:
            proc = await kctl.run(
                "wait", "--for=delete", "configmap/owner", "--timeout=30s", check=False
            )
            waited.append(proc.returncode)

        nursery.start_soon(wait_for_owner)
        await kctl.run(
            "patch",
            "configmap",
            "held",
            "--type",
            "merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
        )
    assert waited == [0]
    assert cm_of(emu, "owner") is None and cm_of(emu, "held") is None


async def test_cascade_foreground_waits_with_kubectl(emu: Emulator, kctl: Kubectl) -> None:
    """Without --wait=false kubectl returns once the owner is gone, dependents first."""
    owner = emu.create(cm("owner"))
    for i in range(3):
        emu.create(cm(f"child-{i}", ref(owner, True)))
    await kctl.run("delete", "configmap", "owner", "--cascade=foreground")
    assert cm_of(emu, "owner") is None
    assert all(cm_of(emu, f"child-{i}") is None for i in range(3))


async def test_cascade_orphan_leaves_dependents_without_the_reference(
    emu: Emulator, kctl: Kubectl
) -> None:
    owner = emu.create(cm("owner"))
    other = emu.create(cm("other"))
    emu.create(cm("child", ref(owner, True)))
    emu.create(cm("shared", ref(owner), ref(other)))
    await kctl.run("delete", "configmap", "owner", "--cascade=orphan")
    await until(emu, lambda: cm_of(emu, "owner") is None)
    await settle(emu)
    child = await kctl.json("get", "configmap", "child")
    assert "ownerReferences" not in child["metadata"]
    assert ref_uids(cm_of(emu, "shared")) == [other["metadata"]["uid"]]


@pytest.fixture
async def sim() -> AsyncIterator[Emulator]:
    async with serve_world(simulate=ClusterSimulation()) as e:
        yield e


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def workload(emu: Emulator, app: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sets = [e.obj for e in emu.store.iter(emu.resource("replicasets", "apps"), "default")]
    pods = [
        e.obj
        for e in emu.store.iter(emu.resource("pods"), "default")
        if (e.obj["metadata"].get("labels") or {}).get("app") == app
    ]
    return [s for s in sets if s["metadata"]["name"].startswith(f"{app}-")], pods


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
async def test_deployment_cascades_through_the_collector(
    sim: Emulator, tmp_path: Path, version: str
) -> None:
    kctl = kubectl_of(version, sim, tmp_path)
    for name in ("web", "keep"):
        await kctl.run("create", "-f", "-", stdin=json.dumps(deployment(name, 2)).encode())
    await until(
        sim, lambda: len(workload(sim, "web")[1]) == 2 and len(workload(sim, "keep")[1]) == 2
    )
    await kctl.run("delete", "deployment", "web")
    await until(sim, lambda: workload(sim, "web") == ([], []))
    await kctl.run("delete", "deployment", "keep", "--cascade=orphan")
    await until(sim, lambda: sim.get("apps/v1", "Deployment", "keep", "default") is None)
    await settle(sim)
    sets, pods = workload(sim, "keep")
    assert len(sets) == 1 and "ownerReferences" not in sets[0]["metadata"]
    # The orphaned ReplicaSet still runs its pods, which still name it as their owner.
    assert len(pods) == 2
    assert all(ref_uids(p) == [sets[0]["metadata"]["uid"]] for p in pods)
    await kctl.run("delete", "replicaset", sets[0]["metadata"]["name"], "--cascade=foreground")
    assert workload(sim, "keep") == ([], [])
