"""Drain on the simulated cluster: real kubelet-like termination, attach/detach, StatefulSet
pods coming back elsewhere with their volumes; and parity with ``kubectl drain``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import PersistentVolume
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.drain import Drainer, DrainOptions
from kubetrio.controllers.machine.drain.metrics import drain_metrics
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation
from tests.helpers.kube import Kubectl

SIM = ClusterSimulation(pod_start_delay=1, grace_factor=0.1, attach_delay=2, detach_delay=3)


async def sim_volume_ids(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
    return {
        pv.name: pv.spec.csi.volume_handle
        for pv in specs
        if pv.spec.csi is not None and pv.spec.csi.driver == SIM_CSI_DRIVER
    }


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}}}


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{"name": "c", "image": "db"}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "storageClassName": "sim-csi",
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def replicaset(name: str, replicas: int, empty_dir: bool = False) -> dict[str, Any]:
    labels = {"app": name}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 10,
        "containers": [{"name": "c", "image": "web"}],
    }
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


@asynccontextmanager
async def drain_setup(emu: Emulator) -> AsyncIterator[Drainer]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    cache = InformerCache(client)
    view = DrainCache.from_cache(cache)
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        yield Drainer(client, view, sim_volume_ids)
        nursery.cancel_scope.cancel()


async def node_known(d: Drainer, name: str) -> None:
    """The drain reads nodes from its cache: wait until that informer has caught up."""
    await d.cache.node_changes.wait_until(
        lambda: d.cache.nodes.get("", name) is not None, trio.current_time() + 30
    )


def running_pods(d: Drainer, prefix: str) -> list[tuple[str, str]]:
    return sorted(
        (p.name, p.spec.node_name)
        for p in d.cache.pods.list("default")
        if p.name.startswith(prefix) and p.status.phase == "Running" and not p.deleting
    )


def attached_elsewhere(d: Drainer, pv: str, node_name: str) -> bool:
    return any(
        va.spec.node_name != node_name and va.status.attached
        for va in d.cache.attachments.list()
        if va.spec.source.persistent_volume_name == pv
    )


async def test_volume_pods_leave_one_by_one_and_reattach_elsewhere(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_world(simulate=SIM) as emu, drain_setup(emu) as d:
        for name in ("n1", "n2", "n3"):
            emu.create(node(name))
        emu.create(statefulset("db", 3))
        await d.cache.pod_changes.wait_until(
            lambda: len(running_pods(d, "db-")) == 3, trio.current_time() + 120
        )
        await d.cache.attachment_changes.wait_until(
            lambda: sum(va.status.attached for va in d.cache.attachments.list()) == 3,
            trio.current_time() + 120,
        )
        victim = dict(running_pods(d, "db-"))["db-0"]
        on_victim = [name for name, where in running_pods(d, "db-") if where == victim]
        claims = {name: d.cache.claims.get("default", f"data-{name}") for name in on_victim}
        volumes = {name: c.spec.volume_name for name, c in claims.items() if c is not None}

        await node_known(d, victim)
        result = await d.drain(victim, DrainOptions())
        assert result.succeeded, result.errors
        assert [r.pod for r in result.pods] == [f"default/{n}" for n in on_victim]
        for report in result.pods:
            # grace 30 s x 0.1; detach 3 s; the replacement (started meanwhile) attaches 2 s
            # after the old attachment is gone.
            assert report.phases["terminate"] == pytest.approx(3, abs=0.2)
            assert report.phases["detach"] == pytest.approx(3, abs=0.2)
            assert report.phases["reattach"] == pytest.approx(2, abs=0.2)
            assert not report.warnings
        for pv in volumes.values():
            assert attached_elsewhere(d, pv, victim)
        assert all(where != victim for _, where in running_pods(d, "db-"))


async def test_budget_blocks_until_the_replacement_is_ready(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_world(simulate=SIM) as emu, drain_setup(emu) as d:
        for name in ("n1", "n2"):
            emu.create(node(name))
        emu.create(replicaset("web", 3))
        emu.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
        await d.cache.pod_changes.wait_until(
            lambda: len(running_pods(d, "web-")) == 3, trio.current_time() + 60
        )
        counts: dict[str, int] = {}
        for _, where in running_pods(d, "web-"):
            counts[where] = counts.get(where, 0) + 1
        victim = max(counts, key=lambda n: counts[n])
        assert counts[victim] == 2
        registry = CollectorRegistry()
        d.metrics = drain_metrics(registry)
        start = trio.current_time()
        await node_known(d, victim)
        result = await d.drain(victim, DrainOptions())
        assert result.succeeded, result.errors
        # One eviction fits the budget; the second waits one 20 s retry, by which time the
        # first pod's replacement runs on the other node and the budget allows it again.
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "pdb_blocked"})
            == 1
        )
        assert trio.current_time() - start == pytest.approx(20 + 1, abs=0.5)
        assert [where for _, where in running_pods(d, "web-")] == [
            n for n in ("n1", "n2") if n != victim
        ] * 3


@pytest.mark.slow
@pytest.mark.kubectl
async def test_parity_with_kubectl_drain(tmp_path: Path, kubectl: Kubectl, emu: Emulator) -> None:
    """Two identical nodes: ours drains one, kubectl the other; the same pods leave."""
    del tmp_path, emu  # kubectl's fixture serves a plain emulator; this test needs a simulated one
    sim = ClusterSimulation(
        pod_start_delay=0,
        grace_factor=0.05,
        attach_delay=0,
        detach_delay=0,
        scheduler=False,
        replicasets=False,
        daemonsets=False,
    )
    async with serve_world(simulate=sim) as emu2, drain_setup(emu2) as d:
        runner = Kubectl(kubectl.binary, {**kubectl.env, "KUBECONFIG": str(emu2.kubeconfig_path)})
        # kubectl deletes (with --force) DaemonSet pods whose DaemonSet is gone; MCM and we
        # always leave DaemonSet pods. With the DaemonSet present both agree. The owners must
        # exist anyway: the garbage collector takes pods whose owner is gone.
        uids: dict[str, str] = {}
        for kind, owner in (("DaemonSet", "ds"), ("ReplicaSet", "rs")):
            spec: dict[str, Any] = {
                "selector": {"matchLabels": {"app": owner}},
                "template": {
                    "metadata": {"labels": {"app": owner}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            }
            created = emu2.create(
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "metadata": {"name": owner, "namespace": "default"},
                    "spec": spec,
                }
            )
            uids[owner] = created["metadata"]["uid"]
        for name in ("ours", "theirs"):
            emu2.create(node(name))
            for kind, extra in (
                (
                    "rs",
                    {
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "ReplicaSet",
                                "name": "rs",
                                "uid": uids["rs"],
                                "controller": True,
                            }
                        ]
                    },
                ),
                (
                    "ds",
                    {
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "DaemonSet",
                                "name": "ds",
                                "uid": uids["ds"],
                                "controller": True,
                            }
                        ]
                    },
                ),
                ("mirror", {"annotations": {"kubernetes.io/config.mirror": "x"}}),
                ("bare", {}),
                ("scratch", {}),
            ):
                spec = {
                    "nodeName": name,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "image": "i"}],
                }
                if kind == "scratch":
                    spec["volumes"] = [{"name": "s", "emptyDir": {}}]
                emu2.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": f"{name}-{kind}", "namespace": "default", **extra},
                        "spec": spec,
                    }
                )
        await d.cache.pod_changes.wait_until(
            lambda: len(d.cache.pods.list()) == 10, trio.current_time() + 30
        )
        await d.cache.node_changes.wait_until(
            lambda: len(d.cache.nodes.list()) == 2, trio.current_time() + 30
        )
        result = await d.drain("ours", DrainOptions())
        assert result.succeeded, result.errors
        await runner.run(
            "drain",
            "theirs",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--force",
            "--timeout=60s",
        )
        await d.cache.pod_changes.wait_until(
            lambda: len(d.cache.pods.list()) <= 6, trio.current_time() + 60
        )

        def kept(node_name: str) -> set[str]:
            return {
                p.name.split("-", 1)[1]
                for p in d.cache.pods.list()
                if p.spec.node_name == node_name and not p.deleting
            }

        assert kept("ours") == kept("theirs") == {"ds", "mirror"}
        ours = emu2.get("v1", "Node", "ours")
        theirs = emu2.get("v1", "Node", "theirs")
        assert ours is not None and theirs is not None
        assert ours["spec"]["unschedulable"] is theirs["spec"]["unschedulable"] is True


def single_pod_statefulset(
    name: str, claims: int, node_name: str, priority: int = 0
) -> dict[str, Any]:
    doc = statefulset(name, 1)
    spec = doc["spec"]
    spec["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node_name}
    spec["template"]["spec"]["priority"] = priority
    spec["volumeClaimTemplates"] = [
        {
            "metadata": {"name": f"vol{i}"},
            "spec": {
                "storageClassName": "sim-csi",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        for i in range(claims)
    ]
    return doc


@pytest.mark.slow
async def test_mixed_pods_two_volume_pod_and_concurrent_plain_pods(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_world(simulate=SIM) as emu, drain_setup(emu) as d:
        for name in ("n1", "n2"):
            doc = node(name)
            doc["metadata"]["labels"] = {"kubernetes.io/hostname": name, "pool": "a"}
            emu.create(doc)
        emu.create(single_pod_statefulset("two", 2, "n1"))
        rs = replicaset("web", 20)
        rs["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
        emu.create(rs)
        await d.cache.pod_changes.wait_until(
            lambda: len(running_pods(d, "web-")) == 20 and len(running_pods(d, "two-")) == 1,
            trio.current_time() + 60,
        )
        await d.cache.attachment_changes.wait_until(
            lambda: sum(va.status.attached for va in d.cache.attachments.list()) == 2,
            trio.current_time() + 60,
        )
        # Let the replacements land elsewhere: the selector pinned them to n1 only so far.
        for kind, name in (("StatefulSet", "two"), ("ReplicaSet", "web")):
            current = emu.get("apps/v1", kind, name, "default")
            assert current is not None
            current["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
            emu.update(current)
        await node_known(d, "n1")
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.errors
        reports = {r.pod: r for r in result.pods}
        two = reports["default/two-0"]
        assert set(two.phases) == {"evict", "terminate", "detach", "reattach"}
        plain = [r for name, r in reports.items() if name.startswith("default/web-")]
        assert len(plain) == 20 and all("detach" not in r.phases for r in plain)
        # Plain pods go concurrently (one 1 s grace, not twenty) alongside the volume pod's
        # 3 s grace + 3 s detach + 2 s re-attach.
        assert trio.current_time() - start == pytest.approx(3 + 3 + 2, abs=0.5)
