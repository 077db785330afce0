"""Node drain against the emulator over HTTP, on the mock clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Event, Node, PersistentVolume
from kubetrio.controllers.machine.drain.drain import Drainer, DrainOptions
from kubetrio.emulator import Emulator
from kubetrio.sim import serve_world
from tests.helpers.drain import drainer, node

# The uids of the ReplicaSet and DaemonSet "o" that the test pods name as their controller.
OWNER_UIDS: dict[str, str] = {}


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    """The emulator with the owners the test pods name: a pod whose owner does not exist is
    the garbage collector's, as in a real cluster (no controller runs here: the owners only
    have to exist)."""
    selector = {"matchLabels": {"app": "o"}}
    template = {
        "metadata": {"labels": {"app": "o"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    async with serve_world() as served:
        for kind, spec in (
            ("ReplicaSet", {"replicas": 0, "selector": selector, "template": template}),
            ("DaemonSet", {"selector": selector, "template": template}),
        ):
            owner = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "o"}, "spec": spec}
            OWNER_UIDS[kind] = served.create(owner)["metadata"]["uid"]
        yield served


def pod(
    name: str,
    node_name: str = "n1",
    *,
    owner: str | None = "ReplicaSet",
    labels: Mapping[str, str] | None = None,
    grace: int = 0,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner,
                "name": "o",
                "uid": OWNER_UIDS[owner],
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "c", "image": "i"}],
        },
    }


def running(emu: Emulator, name: str) -> None:
    emu.set_status(
        "v1",
        "Pod",
        name,
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        "default",
    )


def budget(emu: Emulator, name: str, labels: Mapping[str, str], **status: Any) -> None:
    created = emu.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(labels)}},
        }
    )
    emu.set_status(
        "policy/v1",
        "PodDisruptionBudget",
        name,
        {"observedGeneration": created["metadata"].get("generation", 1), **status},
        "default",
    )


async def settle(emu: Emulator, d: Drainer, pods: int) -> None:
    """Until the drain's cache shows node n1 and ``pods`` pods (written above, not yet seen)."""
    await d.cache.node_changes.wait_until(
        lambda: d.cache.nodes.get("", "n1") is not None, trio.current_time() + 60
    )
    await d.cache.pod_changes.wait_until(
        lambda: len(d.cache.pods.list()) == pods, trio.current_time() + 60
    )


async def test_missing_node_is_nothing_to_drain(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with drainer(emu) as (d, _):
        result = await d.drain("ghost", DrainOptions())
        assert result.node_missing and result.succeeded
        assert result.summary() == "node ghost not found: nothing to drain"


async def test_evicts_cordons_and_leaves_daemonsets_and_mirrors(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("web-1"))
    emu.create(pod("web-2"))
    emu.create(pod("bare", owner=None))
    emu.create(pod("agent", owner="DaemonSet"))
    mirror = pod("static", owner=None)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    emu.create(mirror)
    emu.create(pod("elsewhere", node_name="n2"))
    emu.counters.reset()
    async with drainer(emu) as (d, registry):
        await settle(emu, d, 6)
        result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.errors
        assert sorted(r.pod for r in result.pods) == [
            "default/bare",
            "default/web-1",
            "default/web-2",
        ]
        assert sorted(result.skipped) == [
            "default/agent: DaemonSet-managed (o)",
            "default/static: mirror pod (managed by the kubelet)",
        ]
        assert result.warnings == ["deleting pod default/bare: not managed by a controller"]
        assert emu.counters.get("create", "pods", "eviction") == 3
        left = [
            name
            for name in ("web-1", "web-2", "bare", "agent", "static", "elsewhere")
            if emu.get("v1", "Pod", name, "default") is not None
        ]
        assert left == ["agent", "static", "elsewhere"]
        cordoned = emu.get("v1", "Node", "n1")
        assert cordoned is not None and cordoned["spec"]["unschedulable"] is True
        assert {t["key"] for t in cordoned["spec"]["taints"]} == {
            "dedicated",
            "node.kubernetes.io/not-ready",  # admission's, on every new Node
            "node.kubernetes.io/unschedulable",
        }
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "evicted"}) == 3
        )


async def test_one_off_server_errors_do_not_fail_the_drain(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A 500 or 503 on the cordon, the consistent list and each eviction is retried on the
    spot (three times, within a second): the drain succeeds in one go instead of failing and
    being redone after the machine's retry period. A server that keeps failing still fails it,
    naming the request."""
    emu.create(node("n1"))
    emu.create(pod("web-1"))
    emu.create(pod("web-2"))
    async with drainer(emu) as (d, _):
        await settle(emu, d, 2)
        emu.faults.add(verb="patch", resource="nodes", status=500, count=1)
        emu.faults.add(verb="list", resource="pods", status=503, count=2)
        emu.faults.add(verb="create", resource="pods", subresource="eviction", status=500, count=2)
        started = trio.current_time()
        result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.summary()
        assert trio.current_time() - started < 2.0
        assert emu.counters.get("create", "pods", "eviction") == 4
        assert emu.get("v1", "Pod", "web-1", "default") is None
        emu.create(pod("web-3"))
        await settle(emu, d, 1)
        emu.faults.add(verb="create", resource="pods", subresource="eviction", status=503)
        failed = await d.drain("n1", DrainOptions())
        assert not failed.succeeded
        assert "eviction failed: 503 ServiceUnavailable" in failed.summary()
        assert emu.counters.get("create", "pods", "eviction") == 8  # four tries, no more


async def test_misconfigured_budget_fails_the_pod_by_name(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=1,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        await d.cache.pod_changes.wait_until(
            lambda: bool(d.cache.budgets.list()), trio.current_time() + 10
        )
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions())
        assert result.errors == [
            "default/db-0: pod disruption budget default/db-pdb is misconfigured and requires "
            "zero voluntary evictions"
        ]
        assert trio.current_time() - start < 1, "no pointless retries"


async def test_blocked_eviction_falls_back_to_delete_after_max_retries(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    running(emu, "db-0")
    # Not misconfigured: the only expected pod is not counted healthy.
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=2,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, registry):
        await settle(emu, d, 1)
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions(max_evict_retries=3))
        assert result.succeeded, result.errors
        assert trio.current_time() - start == pytest.approx(3 * 20, abs=1)
        assert emu.get("v1", "Pod", "db-0", "default") is None
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "pdb_blocked"})
            == 3
        )
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "deleted"}) == 1
        )


async def test_drain_deadline_reports_pending_pods_as_errors(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    emu.create(pod("web-0"))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=2,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, _):
        await settle(emu, d, 2)
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions(timeout=90))
        assert trio.current_time() - start == pytest.approx(90, abs=0.5)
        assert result.errors == [
            "default/db-0: the drain timeout passed before the pod left the node"
        ]
        assert emu.get("v1", "Pod", "web-0", "default") is None


async def test_force_deletes_everything_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}, grace=600))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=1,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    emu.counters.reset()
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        result = await d.drain("n1", DrainOptions(force=True))
        assert result.succeeded
        assert emu.get("v1", "Pod", "db-0", "default") is None
        assert emu.counters.get("create", "pods", "eviction") == 0


async def test_drain_records_events_on_the_node(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("web-1"))
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        await d.drain("n1", DrainOptions())
        assert d.events is not None
        await d.events.sender.flush()  # recording never waits on the API; the sender does
        events = await d.client.list(Event, namespace="default")
        reasons = [(e.involved_object.kind, e.involved_object.name, e.reason) for e in events.items]
        assert ("Node", "n1", "DrainStarted") in reasons
        assert ("Node", "n1", "DrainSucceeded") in reasons
        assert isinstance(d.cache.nodes.get("", "n1"), Node)


async def csi_volumes(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
    """The test driver owns CSI volumes of driver "sim"; the ID is the volume handle."""
    return {
        pv.name: pv.spec.csi.volume_handle
        for pv in specs
        if pv.spec.csi is not None and pv.spec.csi.driver == "sim"
    }


def claimed_pod(emu: Emulator, name: str, claim: str, priority: int = 0) -> dict[str, Any]:
    """A pod of the given priority: through a PriorityClass of that value, as a cluster's
    Priority admission requires."""
    klass = f"prio-{priority}"
    if emu.get("scheduling.k8s.io/v1", "PriorityClass", klass) is None:
        emu.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": klass},
                "value": priority,
            }
        )
    doc = pod(name)
    doc["spec"]["priorityClassName"] = klass
    doc["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return doc


def volume_objects(emu: Emulator, claim: str, pv: str, handle: str) -> None:
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {
                "csi": {"driver": "sim", "volumeHandle": handle},
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
            },
        }
    )
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "default"},
            "spec": {
                "volumeName": pv,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )


def attach(emu: Emulator, pv: str, node_name: str, name: str) -> None:
    emu.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": name},
            "spec": {
                "attacher": "sim",
                "nodeName": node_name,
                "source": {"persistentVolumeName": pv},
            },
        }
    )
    emu.set_status("storage.k8s.io/v1", "VolumeAttachment", name, {"attached": True})


def set_attached(emu: Emulator, node_name: str, handles: Sequence[str]) -> None:
    emu.set_status(
        "v1",
        "Node",
        node_name,
        {
            "volumesAttached": [
                {"name": f"kubernetes.io/csi/sim^{h}", "devicePath": ""} for h in handles
            ]
        },
    )


async def test_reattach_is_seen_at_once_through_a_flood_of_attachment_events(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    volume_objects(emu, "data-db-0", "pv-db-0", "vol-1")
    emu.create(claimed_pod(emu, "db-0", "data-db-0"))
    set_attached(emu, "n1", ["vol-1"])
    attach(emu, "pv-db-0", "n1", "va-old")
    async with drainer(emu) as (d, _):
        d.resolve_volume_ids = csi_volumes
        await settle(emu, d, 1)

        async def cluster() -> None:
            """Stands in for kubelet and attach-detach controller, plus a noisy neighbour."""
            await d.cache.pod_changes.wait_until(
                lambda: d.cache.pods.get("default", "db-0") is None, trio.current_time() + 60
            )
            await trio.sleep(4)
            set_attached(emu, "n1", [])
            emu.delete("storage.k8s.io/v1", "VolumeAttachment", "va-old")
            for i in range(300):  # unrelated attachment churn while the drain waits
                attach(emu, f"pv-other-{i}", "n3", f"va-noise-{i}")
                if i % 50 == 0:
                    await trio.sleep(0.5)
            await trio.sleep(3)
            attach(emu, "pv-db-0", "n2", "va-new")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cluster)
            result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.errors
        (report,) = result.pods
        assert report.phases["detach"] == pytest.approx(4, abs=0.1)
        assert report.phases["reattach"] == pytest.approx(6 * 0.5 + 3, abs=0.1)
        assert not report.warnings


async def test_detach_timeout_fails_and_reattach_timeout_only_warns(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    volume_objects(emu, "c-stuck", "pv-stuck", "vol-stuck")
    volume_objects(emu, "c-lonely", "pv-lonely", "vol-lonely")
    emu.create(claimed_pod(emu, "stuck", "c-stuck", priority=10))
    emu.create(claimed_pod(emu, "lonely", "c-lonely", priority=1))
    set_attached(emu, "n1", ["vol-stuck", "vol-lonely"])
    async with drainer(emu) as (d, _):
        d.resolve_volume_ids = csi_volumes
        await settle(emu, d, 2)

        async def detach_only_lonely() -> None:
            await d.cache.pod_changes.wait_until(
                lambda: d.cache.pods.get("default", "lonely") is None, trio.current_time() + 999
            )
            set_attached(emu, "n1", ["vol-stuck"])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(detach_only_lonely)
            start = trio.current_time()
            result = await d.drain("n1", DrainOptions(pv_detach_timeout=50, pv_reattach_timeout=7))
        by_pod = {r.pod: r for r in result.pods}
        # Serial, highest priority first: "stuck" waits out its detach timeout, then "lonely".
        assert by_pod["default/stuck"].error == (
            "timeout while waiting for PVs vol-stuck to detach from node n1"
        )
        assert by_pod["default/lonely"].error is None
        assert by_pod["default/lonely"].warnings == [
            "volumes pv-lonely not attached elsewhere within 7s"
        ]
        assert trio.current_time() - start == pytest.approx(50 + 7, abs=0.5)


async def test_node_disappearing_mid_drain_finishes_the_rest(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    for i in range(3):
        volume_objects(emu, f"c-{i}", f"pv-{i}", f"vol-{i}")
        emu.create(claimed_pod(emu, f"db-{i}", f"c-{i}", priority=i))
    set_attached(emu, "n1", ["vol-0", "vol-1", "vol-2"])
    async with drainer(emu) as (d, _):
        d.resolve_volume_ids = csi_volumes
        await settle(emu, d, 3)

        async def node_vanishes() -> None:
            await d.cache.pod_changes.wait_until(
                lambda: d.cache.pods.get("default", "db-2") is None, trio.current_time() + 99
            )
            await trio.sleep(1)
            emu.delete("v1", "Node", "n1")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(node_vanishes)
            start = trio.current_time()
            result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.errors
        # Fast-tracked: far sooner than the 120 s detach timeout it would otherwise wait out.
        assert trio.current_time() - start < 120
        assert emu.get("v1", "Pod", "db-0", "default") is not None, "never needed evicting"


async def test_eviction_support_comes_from_discovery_and_delete_mode_works(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    from kubetrio.controllers.machine.drain.discovery import eviction_supported

    emu.create(node("n1"))
    emu.create(pod("web-1"))
    emu.counters.reset()
    async with drainer(emu) as (d, _):
        assert await eviction_supported(d.client)
        await settle(emu, d, 1)
        result = await d.drain("n1", DrainOptions(eviction_supported=False))
        assert result.succeeded
        assert emu.counters.get("create", "pods", "eviction") == 0
        assert emu.counters.get("delete", "pods") == 1


async def test_shared_volume_pods_skip_detach_wait_and_same_name_recreation_counts(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    volume_objects(emu, "shared", "pv-shared", "vol-shared")
    emu.create(claimed_pod(emu, "reader-1", "shared"))
    emu.create(claimed_pod(emu, "reader-2", "shared"))
    emu.create(pod("phoenix"))
    set_attached(emu, "n1", ["vol-shared"])  # stays attached: nothing here detaches it
    async with drainer(emu) as (d, _):
        d.resolve_volume_ids = csi_volumes
        await settle(emu, d, 3)

        def recreate_phoenix(rt: Any, event: Any) -> None:
            """A controller that brings the pod back under the same name in the same instant,
            so the drain never sees it absent: only the new UID tells the pod left."""
            name = event.entry.obj["metadata"]["name"]
            if rt.plural == "pods" and event.type == "DELETED" and name == "phoenix":
                emu.create(pod("phoenix"))

        unsubscribe = emu.store.subscribe(recreate_phoenix)
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions())
        unsubscribe()
        assert result.succeeded, result.errors
        assert trio.current_time() - start < 5, "no detach wait for a volume two pods share"
        assert all("detach" not in r.phases for r in result.pods)
