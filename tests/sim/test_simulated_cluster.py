"""The simulated cluster (``serve_world(simulate=...)``): scheduling, pods starting and
terminating on the kubelet, CSI attach/detach with VolumeAttachments and node status, mirror
pods, cordon taints. All on the mock clock; waits are informer events, never polls.

The helpers here (``simulated``, ``Sim``, object builders) are shared with the other
``test_simulated_cluster_*`` modules.
"""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.sim.cluster import (
    SIM_CSI_DRIVER,
    ClusterSimulation,
)
from tests.helpers.simcluster import (
    SimPod,
    attached_names,
    attachment_name,
    claim,
    node,
    pod,
    simulated,
    volume_handle,
    write_times,
)

# -- object builders


# -- tests


async def test_pods_are_scheduled_spread_and_started(mock_clock: trio.testing.MockClock) -> None:
    async with simulated(ClusterSimulation(pod_start_delay=5.0)) as sim:
        for name in ("n1", "n2"):
            sim.emu.create(node(name, zone="a" if name == "n1" else "b"))
        sim.emu.create(node("n3", never_ready=True))
        await sim.nodes.until(
            lambda: (
                all(
                    any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
                    for n in sim.nodes.all()
                    if n.name != "n3"
                )
                and len(sim.nodes.all()) == 3
            )
        )
        n3 = sim.nodes.get("n3")
        assert n3 is not None and n3.status.conditions == ()
        start = trio.current_time()
        for i in range(4):
            sim.emu.create(pod(f"p{i}"))
        sim.emu.create(pod("zonal", selector={"zone": "b"}))
        sim.emu.create(pod("nowhere", selector={"zone": "c"}))
        names = [f"p{i}" for i in range(4)] + ["zonal"]
        await sim.pods.until(lambda: all((p := sim.pod(n)) is not None and p.ready for n in names))
        assert trio.current_time() - start >= 5.0  # the start delay, on the mock clock
        zonal = sim.pod("zonal")
        assert zonal is not None and zonal.node == "n2"
        spread = sorted(len(sim.pods_on(n)) for n in ("n1", "n2"))
        assert spread == [2, 3] or spread == [3, 2]
        assert sim.pods_on("n3") == []
        await sim.pods.until(
            lambda: (p := sim.pod("nowhere")) is not None and p.status.conditions != ()
        )
        nowhere = sim.pod("nowhere")
        assert nowhere is not None and nowhere.node == "" and nowhere.status.phase == "Pending"
        assert [(c.type, c.status, c.reason) for c in nowhere.status.conditions] == [
            ("PodScheduled", "False", "Unschedulable")
        ]
        raw = sim.emu.get("v1", "Pod", "p0", "default")
        assert raw is not None and raw["status"]["podIP"].startswith("10.244.")
        assert raw["status"]["containerStatuses"][0]["ready"] is True


async def test_graceful_termination_takes_grace_times_factor(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with simulated(ClusterSimulation(grace_factor=0.1)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(pod("slow", grace=30))
        sim.emu.create(pod("quick", grace=30))
        await sim.until_ready("slow")
        await sim.until_ready("quick")
        gone: dict[str, list[float]] = {
            name: write_times(
                sim.emu,
                "pods",
                lambda t, o, name=name: t == "DELETED" and o["metadata"]["name"] == name,
            )
            for name in ("slow", "quick")
        }
        start = trio.current_time()
        await sim.client.delete(SimPod, "slow", namespace="default")
        await sim.client.delete(SimPod, "quick", namespace="default", grace_period_seconds=10)
        await sim.pods.until(lambda: sim.pod("quick") is None and sim.pod("slow") is None)
        assert 1.0 <= gone["quick"][0] - start < 1.5  # 10 s x 0.1
        assert 3.0 <= gone["slow"][0] - start < 3.5  # 30 s x 0.1


async def test_csi_volume_attaches_and_detaches(mock_clock: trio.testing.MockClock) -> None:
    async with simulated(ClusterSimulation(attach_delay=2.0, detach_delay=3.0)) as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(claim("data"))
        start = trio.current_time()
        sim.emu.create(pod("db", claims=("data",)))
        db = await sim.until_ready("db")
        assert db.node == "n1"
        assert trio.current_time() - start >= 2.0  # the pod waited for its volume
        handle = volume_handle(sim.emu, "data")
        unique = f"kubernetes.io/csi/{SIM_CSI_DRIVER}^{handle}"
        va_name = attachment_name(handle, "n1")
        await sim.nodes.until(
            lambda: (
                (n := sim.nodes.get("n1")) is not None
                and attached_names(n) == [unique]
                and n.status.volumes_in_use == (unique,)
            )
        )
        await sim.attachments.until(
            lambda: (a := sim.attachments.get(va_name)) is not None and a.status.attached
        )
        va = sim.attachments.get(va_name)
        assert va is not None
        assert va.spec.attacher == SIM_CSI_DRIVER and va.spec.node_name == "n1"
        pvc = sim.emu.get("v1", "PersistentVolumeClaim", "data", "default")
        assert (
            pvc is not None and va.spec.source.persistent_volume_name == pvc["spec"]["volumeName"]
        )
        assert pvc["status"]["phase"] == "Bound"
        n1 = sim.nodes.get("n1")
        assert n1 is not None and n1.status.volumes_in_use == (unique,)
        assert n1.status.volumes_attached[0].device_path == ""
        await sim.client.delete(SimPod, "db", namespace="default", grace_period_seconds=0)
        gone = trio.current_time()
        await sim.attachments.until(lambda: sim.attachments.get(va_name) is None)
        assert trio.current_time() - gone >= 3.0  # detach_delay
        await sim.nodes.until(
            lambda: (
                (n := sim.nodes.get("n1")) is not None
                and n.status.volumes_attached == ()
                and n.status.volumes_in_use == ()
            )
        )


async def test_mirror_pods_are_posted_again(mock_clock: trio.testing.MockClock) -> None:
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        mirror = {"kubernetes.io/config.mirror": "abc123"}
        sim.emu.create(pod("etcd-n1", node_name="n1", annotations=mirror))
        first = await sim.until_ready("etcd-n1")
        await sim.client.delete(SimPod, "etcd-n1", namespace="default")
        await sim.pods.until(
            lambda: (
                (p := sim.pod("etcd-n1")) is not None
                and p.metadata.uid != first.metadata.uid
                and p.ready
            )
        )
        again = sim.pod("etcd-n1")
        assert again is not None and again.node == "n1" and not again.deleting


async def test_cordon_taints_and_uncordon_clears(mock_clock: trio.testing.MockClock) -> None:
    key = "node.kubernetes.io/unschedulable"
    async with simulated() as sim:
        sim.emu.create(node("n1"))
        sim.emu.create(node("n2"))
        await sim.nodes.until(lambda: len(sim.nodes.all()) == 2)
        await sim.client.patch(Node, "n1", {"spec": {"unschedulable": True}})
        await sim.nodes.until(
            lambda: (
                (n := sim.nodes.get("n1")) is not None
                and [(t.key, t.effect) for t in n.spec.taints] == [(key, "NoSchedule")]
            )
        )
        for i in range(3):
            sim.emu.create(pod(f"p{i}"))
        await sim.pods.until(lambda: all((p := sim.pod(f"p{i}")) and p.ready for i in range(3)))
        assert sim.pods_on("n1") == []
        await sim.client.patch(Node, "n1", {"spec": {"unschedulable": None}})
        await sim.nodes.until(lambda: (n := sim.nodes.get("n1")) is not None and not n.spec.taints)
        sim.emu.create(pod("after"))
        after = await sim.until_ready("after")
        assert after.node == "n1"  # the least loaded node again
