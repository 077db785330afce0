"""The simulated cluster's workload controllers and disruption controller: ReplicaSet
replacements, StatefulSet pods coming back with their volume on another node after an eviction,
DaemonSet pods per node, and PodDisruptionBudget status through evictions."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.runtime.client.errors import ApiError
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation
from tests.helpers.simcluster import (
    SimPod,
    app_pods,
    attached_names,
    attachment_name,
    daemonset,
    node,
    pdb,
    ready_pods,
    replicaset,
    simulated,
    statefulset,
    volume_handle,
    write_times,
)


@pytest.mark.slow
async def test_replicaset_replaces_a_deleted_pod(mock_clock: trio.testing.MockClock) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(node("n2"))
        rs = sim.emu.create(replicaset("web", 3))
        await sim.pods.until(lambda: len(ready_pods(sim, "web")) == 3)
        first = ready_pods(sim, "web")
        for p in first:
            assert p.name.startswith("web-")
            ref = p.metadata.controller_ref()
            assert ref is not None and (ref.kind, ref.uid) == ("ReplicaSet", rs["metadata"]["uid"])
        await sim.client.delete(SimPod, first[0].name, namespace="default")
        await sim.pods.until(
            lambda: (
                len(ready_pods(sim, "web")) == 3
                and first[0].name not in {p.name for p in ready_pods(sim, "web")}
            )
        )
        status = (sim.emu.get("apps/v1", "ReplicaSet", "web", "default") or {})["status"]
        assert status["replicas"] == 3 and status["readyReplicas"] == 3
        current = sim.emu.get("apps/v1", "ReplicaSet", "web", "default")
        assert current is not None
        current["spec"]["replicas"] = 1
        sim.emu.update(current)
        await sim.pods.until(lambda: len(app_pods(sim, "web")) == 1)


async def test_a_finished_pod_is_replaced_and_no_longer_counted(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A pod that Succeeded stays, but no longer counts towards the set's replicas: the set
    makes another, and its status counts the running ones only."""
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(replicaset("job", 2))
        await sim.pods.until(lambda: len(ready_pods(sim, "job")) == 2)
        done = sim.emu.get("v1", "Pod", ready_pods(sim, "job")[0].name, "default")
        assert done is not None
        done["status"]["phase"] = "Succeeded"
        sim.emu.update(done, subresource="status")
        await sim.pods.until(
            lambda: (
                len(app_pods(sim, "job")) == 3
                and len([p for p in ready_pods(sim, "job") if p.status.phase == "Running"]) == 2
            )
        )

        def status() -> dict[str, int]:
            return (sim.emu.get("apps/v1", "ReplicaSet", "job", "default") or {})["status"]

        await sim.pods.until(lambda: status()["replicas"] == 2 and status()["readyReplicas"] == 2)


async def test_evicted_statefulset_pod_comes_back_with_its_volume_on_another_node(
    mock_clock: trio.testing.MockClock,
) -> None:
    options = ClusterSimulation(attach_delay=2.0, detach_delay=3.0, grace_factor=0.1)
    async with simulated(options) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(node("n2"))
        sim.emu.create(statefulset("db", 1))
        first = await sim.until_ready("db-0")
        old_node = first.node
        new_node = "n2" if old_node == "n1" else "n1"
        assert [
            v.persistent_volume_claim.claim_name
            for v in first.spec.volumes
            if v.persistent_volume_claim
        ] == ["data-db-0"]
        handle = volume_handle(sim.emu, "data-db-0")
        unique = f"kubernetes.io/csi/{SIM_CSI_DRIVER}^{handle}"
        await sim.nodes.until(lambda: attached_names(sim.nodes.get(old_node)) == [unique])
        await sim.client.patch(Node, old_node, {"spec": {"unschedulable": True}})  # as drain
        await sim.client.evict("db-0", namespace="default")
        await sim.pods.until(lambda: (p := sim.pod("db-0")) is not None and p.deleting)
        # Not recreated while the old pod terminates (30 s x 0.1).
        await sim.pods.until(
            lambda: (p := sim.pod("db-0")) is None or p.metadata.uid != first.metadata.uid
        )
        evicted = trio.current_time()
        await sim.nodes.until(lambda: attached_names(sim.nodes.get(old_node)) == [])
        assert trio.current_time() - evicted >= 3.0  # detach_delay
        await sim.attachments.until(
            lambda: sim.attachments.get(attachment_name(handle, old_node)) is None
        )
        second = await sim.until_ready("db-0")
        assert second.node == new_node and second.metadata.uid != first.metadata.uid
        await sim.nodes.until(lambda: attached_names(sim.nodes.get(new_node)) == [unique])
        new_va = attachment_name(handle, new_node)
        await sim.attachments.until(
            lambda: (a := sim.attachments.get(new_va)) is not None and a.status.attached
        )
        # The new attachment was created only once the old one was gone (single attach).
        order = [
            (kind, va.spec.node_name)
            for kind, va in sim.attachments.events
            if kind in ("add", "delete")
        ]
        assert order == [("add", old_node), ("delete", old_node), ("add", new_node)]
        assert sim.emu.get("v1", "PersistentVolumeClaim", "data-db-0", "default") is not None


async def test_daemonset_runs_one_pod_per_node(mock_clock: trio.testing.MockClock) -> None:
    async with simulated() as sim:
        for name in ("n1", "n2", "n3"):
            sim.emu.create(node(name, role="worker" if name != "n3" else "infra"))
        sim.emu.create(daemonset("agent"))
        sim.emu.create(daemonset("workers-only", {"role": "worker"}))
        await sim.pods.until(lambda: len(ready_pods(sim, "agent")) == 3)
        await sim.pods.until(lambda: len(ready_pods(sim, "workers-only")) == 2)
        assert sorted(p.node for p in ready_pods(sim, "agent")) == ["n1", "n2", "n3"]
        assert sorted(p.node for p in ready_pods(sim, "workers-only")) == ["n1", "n2"]
        victim = next(p for p in ready_pods(sim, "agent") if p.node == "n2")
        ref = victim.metadata.controller_ref()
        assert ref is not None and ref.kind == "DaemonSet"
        await sim.client.delete(SimPod, victim.name, namespace="default", grace_period_seconds=0)
        await sim.pods.until(
            lambda: any(p.node == "n2" and p.name != victim.name for p in ready_pods(sim, "agent"))
        )
        sim.emu.create(node("n4"))
        await sim.pods.until(lambda: len(ready_pods(sim, "agent")) == 4)
        status = (sim.emu.get("apps/v1", "DaemonSet", "agent", "default") or {})["status"]
        assert status["desiredNumberScheduled"] == 4 and status["numberReady"] == 4


@pytest.mark.parametrize(
    ("budget", "desired", "allowed"),
    [
        ({"minAvailable": 3}, 3, 1),
        ({"minAvailable": "50%"}, 2, 2),
        ({"maxUnavailable": 1}, 3, 1),
        ({"maxUnavailable": "25%"}, 3, 1),
        ({"maxUnavailable": "60%"}, 1, 3),
    ],
)
async def test_budget_status_numbers(
    budget: dict[str, int | str], desired: int, allowed: int, mock_clock: trio.testing.MockClock
) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(replicaset("web", 4))
        await sim.pods.until(lambda: len(ready_pods(sim, "web")) == 4)
        created = sim.emu.create(pdb("budget", "web", **budget))
        await sim.pdbs.until(
            lambda: (
                (b := sim.pdbs.get("budget", "default")) is not None
                and b.status.observed_generation == created["metadata"]["generation"]
            )
        )
        b = sim.pdbs.get("budget", "default")
        assert b is not None
        st = b.status
        assert (st.expected_pods, st.current_healthy, st.desired_healthy) == (4, 4, desired)
        assert st.disruptions_allowed == allowed


async def test_budget_goes_down_on_eviction_and_back_up_when_replaced(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated(ClusterSimulation(pod_start_delay=5.0, grace_factor=0.1)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(replicaset("web", 3))
        await sim.pods.until(lambda: len(ready_pods(sim, "web")) == 3)
        sim.emu.create(pdb("budget", "web", minAvailable=2))

        def allowed() -> int | None:
            b = sim.pdbs.get("budget", "default")
            return None if b is None else b.status.disruptions_allowed

        await sim.pdbs.until(lambda: allowed() == 1)
        victim, other = ready_pods(sim, "web")[:2]
        # Cordoned, the only node holds the replacement back until the test says so.
        await sim.client.patch(Node, "n1", {"spec": {"unschedulable": True}})
        await sim.client.evict(victim.name, namespace="default")
        await sim.pdbs.until(lambda: allowed() == 0)
        with pytest.raises(ApiError) as refused:
            await sim.client.evict(other.name, namespace="default")
        assert refused.value.status == 429
        await sim.pdbs.until(
            lambda: (
                (b := sim.pdbs.get("budget", "default")) is not None
                and b.status.current_healthy == 2
                and not b.status.disrupted_pods
            )  # the entry went once the pod was deleting
        )
        assert allowed() == 0
        await sim.client.patch(Node, "n1", {"spec": {"unschedulable": None}})
        # The replacement is scheduled and starts; then the budget allows one again.
        await sim.pdbs.until(lambda: allowed() == 1)
        await sim.pods.until(lambda: len(ready_pods(sim, "web")) == 3)
        assert victim.name not in {p.name for p in ready_pods(sim, "web")}


@pytest.mark.slow
async def test_stale_disrupted_pods_entries_expire(mock_clock: trio.testing.MockClock) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(replicaset("web", 2))
        await sim.pods.until(lambda: len(ready_pods(sim, "web")) == 2)
        sim.emu.create(pdb("budget", "web", minAvailable=1))
        await sim.pdbs.until(
            lambda: (
                (b := sim.pdbs.get("budget", "default")) is not None
                and b.status.disruptions_allowed == 1
            )
        )
        kept = ready_pods(sim, "web")[0].name
        current = sim.emu.get("policy/v1", "PodDisruptionBudget", "budget", "default")
        assert current is not None
        status = dict(current["status"])
        # An eviction that never deleted its pod, and one for a pod that does not exist.
        now = sim.emu.clock.now_rfc3339()
        status["disruptedPods"] = {kept: now, "gone": now}
        cleared = write_times(
            sim.emu,
            "poddisruptionbudgets.policy",
            lambda _t, o: not (o.get("status") or {}).get("disruptedPods"),
        )
        start = trio.current_time()
        sim.emu.set_status("policy/v1", "PodDisruptionBudget", "budget", status, "default")
        await sim.pdbs.until(
            lambda: (
                (b := sim.pdbs.get("budget", "default")) is not None
                and list(b.status.disrupted_pods) == [kept]
                and b.status.current_healthy == 1
                and b.status.disruptions_allowed == 0
            )
        )
        await sim.pdbs.until(
            lambda: (
                (b := sim.pdbs.get("budget", "default")) is not None
                and not b.status.disrupted_pods
                and b.status.disruptions_allowed == 1
            )
        )
        assert 119.0 <= cleared[0] - start < 122.0


@pytest.mark.slow
async def test_deployment_rolls_to_a_new_replicaset(mock_clock: trio.testing.MockClock) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        doc = replicaset("api", 2)
        doc["kind"] = "Deployment"
        sim.emu.create(doc)
        await sim.pods.until(lambda: len(ready_pods(sim, "api")) == 2)
        first = {p.metadata.labels["pod-template-hash"] for p in ready_pods(sim, "api")}
        assert len(first) == 1
        current = sim.emu.get("apps/v1", "Deployment", "api", "default")
        assert current is not None
        current["spec"]["template"]["metadata"]["labels"]["version"] = "2"
        sim.emu.update(current)
        await sim.pods.until(
            lambda: (
                len(app_pods(sim, "api")) == 2
                and len(ready_pods(sim, "api")) == 2
                and all(p.metadata.labels.get("version") == "2" for p in app_pods(sim, "api"))
            )
        )
        status = (sim.emu.get("apps/v1", "Deployment", "api", "default") or {})["status"]
        assert status["replicas"] == 2
        old = sim.emu.get("apps/v1", "ReplicaSet", f"api-{first.pop()}", "default")
        assert old is not None and old["spec"]["replicas"] == 0
        sim.emu.delete("apps/v1", "Deployment", "api", "default")
        await sim.pods.until(lambda: not [p for p in app_pods(sim, "api") if not p.deleting])
