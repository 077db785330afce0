"""``kubectl drain`` against the simulated cluster (real kubectl, real clock, small delays): the
drain evicts, the kubelet terminates, the controllers recreate the pods on the other node and the
StatefulSet's volume follows its pod."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubetrio.emulator import Emulator
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation
from tests.helpers.kube import Kubectl
from tests.helpers.simcluster import (
    attached_names,
    daemonset,
    node,
    pdb,
    pod,
    ready_pods,
    replicaset,
    statefulset,
    volume_handle,
    with_informers,
)

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

FAST = ClusterSimulation(
    pod_start_delay=0.05, grace_factor=0.01, attach_delay=0.2, detach_delay=0.2
)


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    """The ``kubectl`` fixture's emulator, with the simulated cluster running."""
    async with serve_world(simulate=FAST) as e:
        yield e


async def test_kubectl_drain_moves_the_workload_off_the_node(
    emu: Emulator, kubectl: Kubectl
) -> None:
    async with with_informers(emu) as sim:
        # Everything starts on n1 (the only node at first), so the drain moves all of it.
        emu.create(node("n1"))
        emu.create(replicaset("web", 2))
        cache = replicaset("cache", 1)
        cache["spec"]["template"]["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        emu.create(cache)
        emu.create(statefulset("db", 1))
        emu.create(pdb("web-budget", "web", minAvailable=1))
        emu.create(pod("lonely", node_name="n1", app="lonely"))
        mirror = {"kubernetes.io/config.mirror": "x"}
        emu.create(pod("kube-proxy-n1", node_name="n1", annotations=mirror))
        apps = {"web": 2, "cache": 1, "db": 1, "lonely": 1}
        await sim.pods.until(
            lambda: all(len(ready_pods(sim, a)) == n for a, n in apps.items()), patience=30
        )
        emu.create(node("n2"))
        emu.create(daemonset("agent"))
        await sim.pods.until(lambda: len(ready_pods(sim, "agent")) == 2, patience=30)
        assert {p.node for p in sim.pods.all() if not p.name.startswith("agent-")} == {"n1"}
        db_before = sim.pod("db-0")
        assert db_before is not None

        out = await kubectl.run(
            "drain",
            "n1",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--force",
            "--timeout=60s",
        )
        text = out.stdout.decode() + out.stderr.decode()
        assert "node/n1 drained" in text, text
        assert "evicting pod default/db-0" in text
        assert "Ignoring DaemonSet-managed Pods" in text or "ignoring DaemonSet-managed" in text

        await sim.pods.until(
            lambda: all(
                len(ready_pods(sim, a)) == n for a, n in {"web": 2, "cache": 1, "db": 1}.items()
            ),
            patience=30,
        )
        on_n1 = {p.name for p in sim.pods_on("n1") if not p.deleting}
        assert all(n.startswith("agent-") or n == "kube-proxy-n1" for n in on_n1), on_n1
        assert sim.pod("lonely") is None  # no controller: gone for good
        for app in ("web", "cache", "db"):
            assert all(p.node == "n2" for p in ready_pods(sim, app)), app
        db_after = sim.pod("db-0")
        assert db_after is not None and db_after.metadata.uid != db_before.metadata.uid
        handle = volume_handle(emu, "data-db-0")
        unique = f"kubernetes.io/csi/{SIM_CSI_DRIVER}^{handle}"
        await sim.nodes.until(
            lambda: (
                attached_names(sim.nodes.get("n2")) == [unique]
                and attached_names(sim.nodes.get("n1")) == []
            ),
            patience=30,
        )
        n1 = sim.nodes.get("n1")
        assert n1 is not None and n1.spec.unschedulable
        assert [t.key for t in n1.spec.taints] == ["node.kubernetes.io/unschedulable"]
