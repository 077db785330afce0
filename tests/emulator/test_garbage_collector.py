"""The garbage collector over HTTP, on the test's MockClock: deletion propagation (Background,
Foreground, Orphan, the deprecated orphanDependents) through our client, pykube-ng and raw
requests; blockOwnerDeletion; several owners; dangling and invalid owner references; the
collection, namespace and graceful-pod paths; ownerReferences validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pykube
import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import ClusterSimulation
from tests.helpers.gc import cm, cm_of, ref, ref_uids, settle, until
from tests.helpers.kube import blocking, pykube_api

CMS = "/api/v1/namespaces/default/configmaps"


def gone(emu: Emulator, *names: str, namespace: str = "default") -> bool:
    return all(cm_of(emu, n, namespace) is None for n in names)


async def family(emu: Emulator, block: bool | None = True) -> dict[str, Any]:
    """An owner with two dependents."""
    owner = emu.create(cm("owner"))
    emu.create(cm("child-a", ref(owner, block)))
    emu.create(cm("child-b", ref(owner, block)))
    return owner


async def test_background_is_the_default_and_takes_no_time(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    owner = await family(emu)
    grandchild = emu.create(cm("grandchild", ref(cm_of(emu, "child-a") or {})))
    assert grandchild["metadata"]["ownerReferences"][0]["name"] == "child-a"
    start = trio.current_time()
    await kube.delete(ConfigMap, "owner", namespace="default")
    assert cm_of(emu, "owner") is None  # the owner goes at once
    await until(emu, lambda: gone(emu, "child-a", "child-b", "grandchild"))
    assert trio.current_time() - start < 1.0  # the collector's task, not a timer
    assert owner["metadata"]["uid"] not in emu.gc._dependents


@pytest.mark.parametrize("where", ["body", "query"])
async def test_orphan_keeps_dependents_without_the_reference(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock, where: str
) -> None:
    owner = await family(emu)
    other = emu.create(cm("other"))
    emu.create(cm("shared", ref(owner), ref(other)))
    if where == "body":
        r = await client.request("DELETE", f"{CMS}/owner", {"propagationPolicy": "Orphan"})
    else:
        r = await client.request("DELETE", f"{CMS}/owner?propagationPolicy=Orphan")
    assert r.status == 200
    # The answer shows the owner held by the orphan finalizer until the collector is done.
    assert r.json()["metadata"]["finalizers"] == ["orphan"]
    assert r.json()["metadata"]["deletionTimestamp"]
    await until(emu, lambda: gone(emu, "owner"))
    for name in ("child-a", "child-b"):
        assert ref_uids(cm_of(emu, name)) == []
        assert "ownerReferences" not in (cm_of(emu, name) or {})["metadata"]
    assert ref_uids(cm_of(emu, "shared")) == [other["metadata"]["uid"]]


async def test_foreground_waits_for_blocking_dependents_only(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    owner = emu.create(cm("owner"))
    emu.create(cm("blocking", ref(owner, True), finalizers=("example.com/hold",)))
    emu.create(cm("free", ref(owner, False), finalizers=("example.com/hold",)))
    emu.create(cm("plain", ref(owner, True)))
    await kube.delete(ConfigMap, "owner", namespace="default", propagation_policy="Foreground")
    await until(emu, lambda: gone(emu, "plain"))
    await settle(emu)
    held = cm_of(emu, "owner")
    assert held is not None
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert held["metadata"]["deletionTimestamp"]
    for name in ("blocking", "free"):
        dep = cm_of(emu, name)
        assert dep is not None and dep["metadata"]["deletionTimestamp"]
    # The non-blocking dependent does not hold the owner: only the blocking one does.
    blocking = cm_of(emu, "blocking")
    assert blocking is not None
    blocking["metadata"]["finalizers"] = []
    emu.update(blocking)
    await until(emu, lambda: gone(emu, "blocking", "owner"))
    assert cm_of(emu, "free") is not None  # still held by its own finalizer


async def test_foreground_cascades_foreground_through_a_chain(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    top = emu.create(cm("top"))
    middle = emu.create(cm("middle", ref(top, True)))
    emu.create(cm("leaf", ref(middle, True), finalizers=("example.com/hold",)))
    r = await client.request("DELETE", f"{CMS}/top", {"propagationPolicy": "Foreground"})
    assert r.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    await until(
        emu,
        lambda: (cm_of(emu, "leaf") or {}).get("metadata", {}).get("deletionTimestamp") is not None,
    )
    await settle(emu)
    # The middle object is deleted in the foreground in turn: it waits for its leaf.
    mid = cm_of(emu, "middle")
    assert mid is not None and mid["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert cm_of(emu, "top") is not None
    leaf = cm_of(emu, "leaf")
    assert leaf is not None
    leaf["metadata"].pop("finalizers")
    emu.update(leaf)
    await until(emu, lambda: gone(emu, "leaf", "middle", "top"))


async def test_a_dependent_goes_only_with_its_last_owner(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    a = emu.create(cm("a"))
    b = emu.create(cm("b"))
    emu.create(cm("both", ref(a, True), ref(b, True)))
    await kube.delete(ConfigMap, "a", namespace="default")
    await until(emu, lambda: ref_uids(cm_of(emu, "both")) == [b["metadata"]["uid"]])
    # Foreground on the remaining owner: no other owner keeps it now, so it goes.
    c = emu.create(cm("c"))
    emu.create(cm("pair", ref(b, True), ref(c, True)))
    await kube.delete(ConfigMap, "b", namespace="default", propagation_policy="Foreground")
    await until(emu, lambda: gone(emu, "b", "both"))
    # The dependent that still has c loses only b's reference, as kube's collector does.
    assert ref_uids(cm_of(emu, "pair")) == [c["metadata"]["uid"]]


async def test_dangling_owners_are_collected(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    real = emu.create(cm("real"))
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
    wrong_uid = {**ref(real), "uid": "0000-not-real"}
    emu.create(cm("orphan-1", missing))
    emu.create(cm("orphan-2", wrong_uid))
    emu.create(cm("kept", ref(real), missing))  # one real owner is enough to stay
    await until(emu, lambda: gone(emu, "orphan-1", "orphan-2"))
    await until(emu, lambda: ref_uids(cm_of(emu, "kept")) == [real["metadata"]["uid"]])


async def test_cluster_scoped_owner_of_namespaced_dependents(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    pc = emu.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "tier"},
            "value": 10,
        }
    )
    emu.create(cm("tiered", ref(pc)))
    await settle(emu)
    assert cm_of(emu, "tiered") is not None  # a cluster-scoped owner is valid from any namespace
    r = await client.request("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/tier")
    assert r.status == 200
    await until(emu, lambda: gone(emu, "tiered"))


async def events_for(emu: Emulator, name: str, namespace: str) -> list[dict[str, Any]]:
    rt = emu.resource("events")
    return [e.obj for e in emu.store.iter(rt, namespace) if e.obj["involvedObject"]["name"] == name]


async def test_owner_in_another_namespace_is_absent_and_reported(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    owner = emu.create(cm("owner"))
    emu.create(cm("stray", ref(owner), namespace="other"))
    await until(emu, lambda: gone(emu, "stray", namespace="other"))
    assert cm_of(emu, "owner") is not None
    events = await events_for(emu, "stray", "other")
    assert [e["reason"] for e in events] == ["OwnerRefInvalidNamespace"]
    assert events[0]["type"] == "Warning"
    assert events[0]["source"] == {"component": "garbage-collector-controller"}
    assert events[0]["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: other, name: owner, uid: "
        f'{owner["metadata"]["uid"]}] does not exist in namespace "other"'
    )


async def test_namespaced_owner_of_cluster_scoped_object_is_never_resolved(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    owner = emu.create(cm("owner"))
    role = emu.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "odd", "ownerReferences": [ref(owner)]},
            "rules": [],
        }
    )
    await settle(emu)
    assert emu.get("rbac.authorization.k8s.io/v1", "ClusterRole", "odd") is not None
    events = await events_for(emu, "odd", "default")  # cluster-scoped: reported in default
    assert [e["reason"] for e in events] == ["OwnerRefInvalidNamespace"]
    assert events[0]["involvedObject"]["uid"] == role["metadata"]["uid"]
    emu.delete("v1", "ConfigMap", "owner", "default")
    await settle(emu)
    # Kube's collector gives up on such a reference: the object stays even without its owner.
    assert emu.get("rbac.authorization.k8s.io/v1", "ClusterRole", "odd") is not None


async def test_orphan_dependents_deprecated_option_and_conflicts(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    owner = await family(emu)
    r = await client.request(
        "DELETE", f"{CMS}/owner", {"orphanDependents": True, "propagationPolicy": "Foreground"}
    )
    assert r.status == 422
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
        '"Foreground": orphanDependents and deletionPropagation cannot be both set'
    )
    assert status["details"]["causes"][0]["field"] == "propagationPolicy"
    r = await client.request("DELETE", f"{CMS}/owner", {"propagationPolicy": "Sideways"})
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["reason"] == "FieldValueNotSupported"
    r = await client.request("DELETE", f"{CMS}/owner?orphanDependents=maybe")
    assert r.status == 400
    assert cm_of(emu, "owner") is not None  # refused requests changed nothing
    r = await client.request("DELETE", f"{CMS}/owner?orphanDependents=true")
    assert r.json()["metadata"]["finalizers"] == ["orphan"]
    await until(emu, lambda: gone(emu, "owner"))
    assert ref_uids(cm_of(emu, "child-a")) == []
    second = emu.create(cm("second"))
    emu.create(cm("child-c", ref(second)))
    r = await client.request("DELETE", f"{CMS}/second", {"orphanDependents": False})
    assert r.status == 200
    await until(emu, lambda: gone(emu, "second", "child-c"))
    assert owner["metadata"]["uid"] != second["metadata"]["uid"]


async def test_a_second_delete_can_change_the_choice(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    """While only finalizers hold an object, a later DELETE may switch orphan/foreground."""
    owner = emu.create(cm("owner", finalizers=("example.com/hold",)))
    emu.create(cm("child", ref(owner)))
    r = await client.request("DELETE", f"{CMS}/owner", {"propagationPolicy": "Orphan"})
    assert r.json()["metadata"]["finalizers"] == ["example.com/hold", "orphan"]
    await until(emu, lambda: ref_uids(cm_of(emu, "child")) == [])
    await until(
        emu,
        lambda: (cm_of(emu, "owner") or {})["metadata"].get("finalizers") == ["example.com/hold"],
    )
    owner2 = emu.create(cm("owner2", finalizers=("example.com/hold",)))
    emu.create(cm("child2", ref(owner2, True), finalizers=("example.com/hold",)))
    await client.request("DELETE", f"{CMS}/owner2", {"propagationPolicy": "Foreground"})
    r = await client.request("DELETE", f"{CMS}/owner2", {"propagationPolicy": "Background"})
    assert r.json()["metadata"]["finalizers"] == ["example.com/hold"]


async def test_pykube_propagation_policy(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    api = pykube_api(emu)
    owner = await family(emu)
    obj = await blocking(
        lambda: pykube.ConfigMap.objects(api, namespace="default").get(name="owner")
    )
    await blocking(lambda: obj.delete(propagation_policy="Orphan"))
    await until(emu, lambda: gone(emu, "owner"))
    assert ref_uids(cm_of(emu, "child-b")) == []
    second = emu.create(cm("second"))
    emu.create(cm("child-c", ref(second)))
    # pykube's raw DELETE with the options in the body, as its delete() builds them.
    await blocking(
        lambda: api.delete(
            url="configmaps/second",
            namespace="default",
            data=json.dumps({"propagationPolicy": "Background"}),
        ).raise_for_status()
    )
    await until(emu, lambda: gone(emu, "second", "child-c"))
    assert owner["metadata"]["uid"]


async def test_deletecollection_propagates(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    for i in range(3):
        owner = emu.create(
            {**cm(f"owner-{i}"), "metadata": {"name": f"owner-{i}", "labels": {"role": "owner"}}}
        )
        emu.create(cm(f"child-{i}", ref(owner)))
    r = await client.request(
        "DELETE", f"{CMS}?labelSelector=role%3Downer", {"propagationPolicy": "Orphan"}
    )
    assert r.status == 200
    assert [i["metadata"]["finalizers"] for i in r.json()["items"]] == [["orphan"]] * 3
    await until(emu, lambda: gone(emu, "owner-0", "owner-1", "owner-2"))
    assert all(ref_uids(cm_of(emu, f"child-{i}")) == [] for i in range(3))
    for i in range(2):
        owner = emu.create(
            {**cm(f"next-{i}"), "metadata": {"name": f"next-{i}", "labels": {"role": "next"}}}
        )
        emu.create(cm(f"kid-{i}", ref(owner, True), finalizers=("example.com/hold",)))
    r = await client.request(
        "DELETE", f"{CMS}?labelSelector=role%3Dnext&propagationPolicy=Foreground"
    )
    assert [i["metadata"]["finalizers"] for i in r.json()["items"]] == [["foregroundDeletion"]] * 2
    await settle(emu)
    assert cm_of(emu, "next-0") is not None and cm_of(emu, "next-1") is not None
    for i in range(2):
        kid = cm_of(emu, f"kid-{i}")
        assert kid is not None and kid["metadata"]["deletionTimestamp"]
        kid["metadata"]["finalizers"] = []
        emu.update(kid)
    await until(emu, lambda: gone(emu, "next-0", "next-1", "kid-0", "kid-1"))


async def test_a_graceful_pod_holds_its_foreground_owner_until_it_is_gone(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    owner = emu.create(cm("owner"))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "worker",
            "namespace": "default",
            "ownerReferences": [ref(owner, True)],
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    emu.create(pod)
    await client.request("DELETE", f"{CMS}/owner", {"propagationPolicy": "Foreground"})
    await until(
        emu,
        lambda: (
            (emu.get("v1", "Pod", "worker", "default") or {})["metadata"].get("deletionTimestamp")
            is not None
        ),
    )
    await settle(emu)
    terminating = emu.get("v1", "Pod", "worker", "default")
    assert terminating is not None
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30  # its own grace period
    assert cm_of(emu, "owner") is not None
    # What a kubelet does once the containers stopped.
    r = await client.request(
        "DELETE", "/api/v1/namespaces/default/pods/worker?gracePeriodSeconds=0"
    )
    assert r.status == 200
    await until(
        emu, lambda: gone(emu, "owner") and emu.get("v1", "Pod", "worker", "default") is None
    )


async def test_foreground_pod_owner_keeps_its_grace_period(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    """A bound pod deleted in the foreground with no dependents: the collector drops the
    finalizer at once, the pod still waits for its kubelet."""
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "solo", "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    r = await client.request(
        "DELETE", "/api/v1/namespaces/default/pods/solo?propagationPolicy=Foreground"
    )
    assert r.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    await until(
        emu,
        lambda: not (emu.get("v1", "Pod", "solo", "default") or {})["metadata"].get("finalizers"),
    )
    pod = emu.get("v1", "Pod", "solo", "default")
    assert pod is not None and pod["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_namespace_deletion_with_owners_and_held_dependents(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    owner = emu.create(cm("owner", namespace="team"))
    emu.create(cm("child", ref(owner, True), namespace="team", finalizers=("example.com/hold",)))
    emu.create(cm("loose", ref(owner), namespace="team"))
    r = await client.request("DELETE", "/api/v1/namespaces/team")
    assert r.status == 200
    await until(emu, lambda: gone(emu, "owner", "loose", namespace="team"))
    assert emu.get("v1", "Namespace", "team") is not None  # the held child keeps it
    child = cm_of(emu, "child", "team")
    assert child is not None
    child["metadata"]["finalizers"] = []
    emu.update(child)
    await until(emu, lambda: emu.get("v1", "Namespace", "team") is None)


async def test_jobs_orphan_by_default_with_kubes_warning(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    jobs = "/apis/batch/v1/namespaces/default/jobs"

    def job(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        }

    for name in ("kept", "cleaned"):
        created = (await client.request("POST", jobs, job(name))).json()
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-pod",
                    "namespace": "default",
                    "ownerReferences": [ref(created, True, controller=True)],
                },
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        )
    r = await client.request("DELETE", f"{jobs}/kept")
    assert r.headers["warning"].startswith('299 - "child pods are preserved by default')
    r = await client.request("DELETE", f"{jobs}/cleaned?propagationPolicy=Background")
    assert "warning" not in r.headers
    await until(emu, lambda: emu.get("v1", "Pod", "cleaned-pod", "default") is None)
    await until(emu, lambda: emu.get("batch/v1", "Job", "kept", "default") is None)
    kept = emu.get("v1", "Pod", "kept-pod", "default")
    assert kept is not None and "ownerReferences" not in kept["metadata"]


@pytest.mark.parametrize(
    ("refs", "field", "message"),
    [
        (
            [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}],
            "metadata.ownerReferences[0].uid",
            "Required value: must not be empty",
        ),
        (
            [{"apiVersion": "a/b/c", "kind": "ConfigMap", "name": "x", "uid": "1"}],
            "metadata.ownerReferences[0].apiVersion",
            'Invalid value: "a/b/c": must be <group>/<version> or <version>',
        ),
        (
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "x",
                    "uid": "1",
                    "controller": True,
                },
                {"apiVersion": "v1", "kind": "Secret", "name": "y", "uid": "2", "controller": True},
            ],
            "metadata.ownerReferences",
            'Found "true" in references for ConfigMap/x and Secret/y',
        ),
    ],
)
async def test_owner_references_are_validated(
    client: EmuClient,
    mock_clock: trio.testing.MockClock,
    refs: list[dict[str, Any]],
    field: str,
    message: str,
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "bad", "ownerReferences": refs},
    }
    r = await client.request("POST", CMS, body)
    assert r.status == 422
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == field
    assert message in cause["message"]
    bad_type = {**body, "metadata": {"name": "bad", "ownerReferences": [{"uid": 5}]}}
    assert (await client.request("POST", CMS, bad_type)).status == 400


async def test_nothing_indexed_for_objects_without_owners(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for i in range(200):
        emu.create(cm(f"plain-{i}"))
    emu.delete("v1", "ConfigMap", "plain-7", "default")
    assert not emu.gc._dependents and not emu.gc._to_delete and not emu.gc._to_orphan


async def test_orphan_and_foreground_finalizers_exclude_each_other(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    body = cm("both", finalizers=("orphan", "foregroundDeletion"))
    r = await client.request("POST", CMS, body)
    assert r.status == 422
    assert r.json()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan '
            "and foregroundDeletion cannot be both set",
            "field": "metadata.finalizers",
        }
    ]


async def test_a_restored_state_is_verified_on_start(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """Objects restored from a state file are checked as the real collector's first sync
    checks what its informers list: one whose owner vanished meanwhile is collected."""
    state = tmp_path / "state.json"
    async with serve_world(state=state) as first:
        owner = first.create(cm("owner"))
        first.create(cm("child", ref(owner)))
        first.create(cm("kept", ref(first.create(cm("stays")))))
    doc = json.loads(state.read_text())
    doc["objects"] = [o for o in doc["objects"] if o["object"]["metadata"]["name"] != "owner"]
    state.write_text(json.dumps(doc))
    async with serve_world(state=state) as second:
        await until(second, lambda: gone(second, "child"))
        await settle(second)
        assert cm_of(second, "kept") is not None


async def test_foreground_deployment_waits_for_its_pods_to_terminate(
    mock_clock: trio.testing.MockClock,
) -> None:
    """With the simulated cluster: the Deployment, then its ReplicaSet, stay (foreground)
    until the kubelet has ended every pod's grace period, on the emulator's clock."""
    async with serve_world(simulate=ClusterSimulation(grace_factor=1.0)) as sim:
        sim.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        labels = {"app": "web"}
        sim.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "terminationGracePeriodSeconds": 20,
                            "containers": [{"name": "c", "image": "busybox"}],
                        },
                    },
                },
            }
        )
        pods_rt, sets_rt = sim.resource("pods"), sim.resource("replicasets", "apps")

        def running() -> int:
            return sum(
                1
                for e in sim.store.iter(pods_rt, "default")
                if (e.obj.get("status") or {}).get("phase") == "Running"
            )

        await until(sim, lambda: running() == 2)
        start = trio.current_time()
        sim.store.delete(
            sim.resource("deployments", "apps"), "default", "web", propagation="Foreground"
        )
        await until(
            sim,
            lambda: all(
                e.obj["metadata"].get("deletionTimestamp")
                for e in sim.store.iter(pods_rt, "default")
            ),
        )
        for kind, rt in (("Deployment", sim.resource("deployments", "apps")), ("RS", sets_rt)):
            held = [e.obj["metadata"] for e in sim.store.iter(rt, "default")]
            assert [m.get("finalizers") for m in held] == [["foregroundDeletion"]], kind
        await until(sim, lambda: not list(sim.store.iter(pods_rt, "default")))
        # Each pod took its grace period: meanwhile the owners stayed, held by their finalizer.
        assert trio.current_time() - start >= 20
        await until(sim, lambda: sim.get("apps/v1", "Deployment", "web", "default") is None)
        assert not list(sim.store.iter(sets_rt, "default"))
