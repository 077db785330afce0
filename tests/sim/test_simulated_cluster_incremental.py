"""The simulated cluster's incremental passes decide as whole-cluster passes did: the kubelet
visits only changed pods, pods on changed nodes and pods waiting on a timer, so these pin the
cases where a pod must be reconsidered although it did not change itself; the workload
controllers look a ReplicaSet's pods up by owner, so one pins that index's start; the
attach/detach controller reads only pods naming a claim and reports only nodes whose
attachments or status changed; the scheduler keeps loads and node order from events and
retries an unplaceable pod only when a node changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.sim import serve_world
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation
from tests.helpers.simcluster import (
    Sim,
    attached_names,
    claim,
    node,
    pod,
    replicaset,
    simulated,
    volume_handle,
    with_informers,
    write_times,
)


def started(emu_pods: list[float]) -> float:
    assert len(emu_pods) == 1, emu_pods
    return emu_pods[0]


async def test_a_pod_bound_to_an_unregistered_node_starts_once_the_node_is_ready(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated(ClusterSimulation(pod_start_delay=2.0)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(pod("early", node_name="late"))
        sim.emu.create(pod("other", node_name="n1"))
        running = write_times(
            sim.emu,
            "pods",
            lambda t, o: (
                o["metadata"]["name"] == "early" and o.get("status", {}).get("phase") == "Running"
            ),
        )
        await sim.until_ready("other")  # passes ran after "early" was written; it waits
        early = sim.pod("early")
        assert early is not None and early.status.phase in ("", "Pending")
        registered = trio.current_time()
        sim.emu.create(node("late"))  # nothing about the pod changes: the node brings it up
        await sim.until_ready("early")
        assert started(running) - registered >= 2.0


async def test_a_pod_recreated_under_its_name_waits_the_whole_start_delay_again(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated(ClusterSimulation(pod_start_delay=5.0)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(pod("p", node_name="n1"))
        running = write_times(
            sim.emu,
            "pods",
            lambda t, o: (
                o["metadata"]["name"] == "p" and o.get("status", {}).get("phase") == "Running"
            ),
        )
        await trio.sleep(3.0)  # the mock clock: the first pod's start timer is 3 s along
        sim.emu.delete("v1", "Pod", "p", "default", grace=0)
        assert sim.emu.get("v1", "Pod", "p", "default") is None
        recreated = trio.current_time()
        sim.emu.create(pod("p", node_name="n1"))  # same name, new uid: a new timer
        await sim.until_ready("p")
        assert started(running) - recreated >= 5.0


async def test_pods_on_a_node_that_returns_become_ready_again(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(pod("p", node_name="n1"))
        await sim.until_ready("p")
        raw = sim.emu.get("v1", "Node", "n1")
        assert raw is not None
        for c in raw["status"]["conditions"]:
            if c["type"] == "Ready":
                c.update(status="Unknown", reason="NodeStatusUnknown")
        sim.emu.update(raw, subresource="status")  # node lifecycle marks p not Ready
        await sim.pods.until(lambda: (p := sim.pod("p")) is not None and not p.ready)
        raw = sim.emu.get("v1", "Node", "n1")
        assert raw is not None
        raw["status"]["conditions"] = [
            c for c in raw["status"]["conditions"] if c["type"] != "Ready"
        ]
        sim.emu.update(raw, subresource="status")  # the kubelet posts Ready: p is Ready again
        await sim.until_ready("p")


async def test_a_replicaset_owns_the_pods_stored_before_the_cluster_started(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """The owner index is filled from the store when the simulated cluster starts: a ReplicaSet
    restored with its pods scales down among them rather than seeing none and adding more."""
    state = tmp_path / "state.json"
    async with serve_world(state=state) as plain:  # no simulated cluster: nothing acts
        plain.create(node("n1"))
        rs = plain.create(replicaset("web", 2))
        ref = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": rs["metadata"]["uid"],
            "controller": True,
        }
        ready = [{"type": "Ready", "status": "True"}]
        plain.set_status("v1", "Node", "n1", {"conditions": ready})
        for i in range(2):  # running already: after the restart no event names them
            doc = pod(f"web-{i}", node_name="n1", app="web")
            doc["metadata"]["ownerReferences"] = [ref]
            plain.create(doc)
            running = {"phase": "Running", "conditions": ready}
            plain.set_status("v1", "Pod", f"web-{i}", running, "default")
        assert plain.persister is not None
        plain.persister.flush()
    async with (
        serve_world(state=state, simulate=ClusterSimulation()) as served,
        with_informers(served) as sim,
    ):
        await sim.until_ready("web-0")
        await sim.until_ready("web-1")
        current = sim.emu.get("apps/v1", "ReplicaSet", "web", "default")
        assert current is not None
        current["spec"]["replicas"] = 1
        sim.emu.update(current)
        await sim.pods.until(lambda: len([p for p in sim.pods.all() if not p.deleting]) == 1)
        assert len(sim.pods.all()) >= 1
        assert {p.name for p in sim.pods.all()} <= {"web-0", "web-1"}


async def test_a_volume_attaches_once_the_node_its_pod_is_bound_to_registers(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The attach/detach controller reads only pods that name a claim, but decides on each
    whether its node exists at every pass, not when the pod changed."""
    async with simulated(ClusterSimulation(attach_delay=2.0)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(claim("data"))
        sim.emu.create(pod("db", node_name="late", claims=("data",)))
        sim.emu.create(pod("other", node_name="n1"))
        await sim.until_ready("other")  # passes ran after "db" was written
        assert sim.emu.store.count_of("volumeattachments.storage.k8s.io") == 0  # no "late" yet
        handle = volume_handle(sim.emu, "data")
        registered = trio.current_time()
        sim.emu.create(node("late"))
        db = await sim.until_ready("db")
        assert db.node == "late" and trio.current_time() - registered >= 2.0
        unique = f"kubernetes.io/csi/{SIM_CSI_DRIVER}^{handle}"
        await sim.nodes.until(
            lambda: (n := sim.nodes.get("late")) is not None and attached_names(n) == [unique]
        )


async def test_a_stale_attached_volume_on_a_node_is_cleared(
    mock_clock: trio.testing.MockClock,
) -> None:
    """``volumesAttached`` mirrors the node's VolumeAttachments: written by anyone else, it is
    put back, for a node no attachment targets too."""
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        await sim.nodes.until(
            lambda: (
                (n := sim.nodes.get("n1")) is not None
                and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            )
        )
        raw = sim.emu.get("v1", "Node", "n1")
        assert raw is not None
        stale = [{"name": "kubernetes.io/csi/x^gone", "devicePath": ""}]
        raw["status"]["volumesAttached"] = stale
        sim.emu.update(raw, subresource="status")
        # The store, not the informer (which may not have seen the stale write yet).
        await sim.nodes.until(
            lambda: "volumesAttached" not in (sim.emu.get("v1", "Node", "n1") or {})["status"]
        )


def bound(sim: Sim, names: list[str]) -> dict[str, str]:
    """Each pod's node as the store has it ("" while unbound)."""
    out = {}
    for name in names:
        raw = sim.emu.get("v1", "Pod", name, "default")
        out[name] = (raw or {}).get("spec", {}).get("nodeName", "")
    return out


async def test_the_scheduler_places_on_the_least_loaded_fitting_node_by_name(
    mock_clock: trio.testing.MockClock,
) -> None:
    """Load is the bound pods not finished; ties go by node name; pods in creation order (same
    second: by name); a node selector skips the less loaded nodes it does not match."""
    async with simulated() as sim:
        for name, zone in (("a", "x"), ("b", "x"), ("c", "y")):
            sim.emu.create(node(name, zone=zone))
        sim.emu.create(pod("on-a-1", node_name="a"))
        sim.emu.create(pod("on-a-2", node_name="a"))
        sim.emu.create(pod("on-b", node_name="b"))
        for i in range(3):  # finished: no load on c
            sim.emu.create(pod(f"done-{i}", node_name="c"))
            sim.emu.set_status("v1", "Pod", f"done-{i}", {"phase": "Succeeded"}, "default")
        await sim.until_ready("on-b")
        names = ["p1", "p2", "p3", "p4", "px"]
        for name in ("p3", "p1", "p4", "p2"):  # one trio step: ordered by name, not by write
            sim.emu.create(pod(name))
        sim.emu.create(pod("px", selector={"zone": "x"}))
        await sim.pods.until(lambda: all(bound(sim, names).values()))
        # loads a2 b1 c0: p1→c; a2 b1 c1: p2→b; a2 b2 c1: p3→c; a2 b2 c2: p4→a;
        # a3 b2 c2, px only fits a or b: b.
        assert bound(sim, names) == {"p1": "c", "p2": "b", "p3": "c", "p4": "a", "px": "b"}


async def test_a_pod_no_node_fits_is_placed_once_a_node_changes_to_fit_it(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated() as sim:
        sim.emu.create(node("a"))
        sim.emu.create(node("b"))
        sim.emu.create(pod("zonal", selector={"zone": "z"}))
        await sim.pods.until(
            lambda: (p := sim.pod("zonal")) is not None and p.status.conditions != ()
        )
        sim.emu.create(pod("other"))  # pods changing do not make it fit
        await sim.until_ready("other")
        assert bound(sim, ["zonal"]) == {"zonal": ""}
        raw = sim.emu.get("v1", "Node", "b")
        assert raw is not None
        raw["metadata"]["labels"]["zone"] = "z"
        sim.emu.update(raw)
        await sim.until_ready("zonal")
        assert bound(sim, ["zonal"]) == {"zonal": "b"}


async def test_a_deleted_pod_frees_its_place_and_a_cordoned_node_takes_none(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated(ClusterSimulation(grace_factor=0.0)) as sim:
        sim.emu.create(node("a"))
        sim.emu.create(node("b"))
        sim.emu.create(pod("on-a", node_name="a"))
        sim.emu.create(pod("on-b", node_name="b"))
        await sim.until_ready("on-a")
        await sim.until_ready("on-b")
        sim.emu.delete("v1", "Pod", "on-b", "default")
        await sim.pods.until(lambda: sim.pod("on-b") is None)
        sim.emu.create(pod("next"))  # a1 b0: b
        await sim.until_ready("next")
        raw = sim.emu.get("v1", "Node", "a")
        assert raw is not None
        raw["spec"] = {"unschedulable": True}
        sim.emu.update(raw)
        sim.emu.delete("v1", "Pod", "on-a", "default")  # a0 b1, but a is cordoned
        await sim.pods.until(lambda: sim.pod("on-a") is None)
        sim.emu.create(pod("last"))
        await sim.until_ready("last")
        assert bound(sim, ["next", "last"]) == {"next": "b", "last": "b"}


@pytest.mark.slow
async def test_pods_of_a_gone_node_are_deleted_after_the_quarantine_a_return_resets(
    mock_clock: trio.testing.MockClock,
) -> None:
    """Node lifecycle visits pods bound to changed nodes and pods in quarantine: a node gone
    40 s takes its pods along; one back in time cancels, and going again restarts the 40 s."""
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(node("n2"))
        sim.emu.create(pod("p1", node_name="n1"))
        sim.emu.create(pod("p2", node_name="n2"))
        await sim.until_ready("p1")
        await sim.until_ready("p2")
        gone = {
            name: write_times(
                sim.emu,
                "pods",
                lambda t, o, name=name: t == "DELETED" and o["metadata"]["name"] == name,
            )
            for name in ("p1", "p2")
        }
        sim.emu.delete("v1", "Node", "n1")
        sim.emu.delete("v1", "Node", "n2")
        left = trio.current_time()
        await trio.sleep(30.0)  # the mock clock: 30 s into both quarantines
        sim.emu.create(node("n2"))  # back: p2's quarantine ends
        await sim.nodes.until(
            lambda: (n := sim.nodes.get("n2")) is not None and n.status.conditions != ()
        )  # the passes ran with n2 there
        sim.emu.delete("v1", "Node", "n2")  # and gone again: a new one starts now
        again = trio.current_time()
        await sim.pods.until(lambda: sim.pod("p1") is None and sim.pod("p2") is None)
        assert 40.0 <= gone["p1"][0] - left < 41.0
        assert 40.0 <= gone["p2"][0] - again < 41.0
