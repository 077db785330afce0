"""The simulated cluster (``serve_world(simulate=...)``): scheduling, pods starting and
terminating on the kubelet, CSI attach/detach with VolumeAttachments and node status, mirror
pods, cordon taints. All on the mock clock; waits are informer events, never polls.

The helpers here (``simulated``, ``Sim``, object builders) are shared with the other
``test_simulated_cluster_*`` modules.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import msgspec
import trio
import trio.testing

from kubetrio.api.core import Node, PodSpec
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.policy import PodDisruptionBudget
from kubetrio.api.registry import KindInfo, lookup
from kubetrio.api.storage import VolumeAttachment
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import (
    NEVER_READY_ANNOTATION,
    SIM_CSI_DRIVER,
    ClusterSimulation,
)
from kubetrio.testing import eventually

T = TypeVar("T", bound=KubeObject)


class PodCondition(Model, kw_only=True):
    type: str
    status: str
    reason: str = ""


class SimPodStatus(Model, kw_only=True):
    phase: str = ""
    conditions: tuple[PodCondition, ...] = ()


class SimPod(KubeObject, kw_only=True):
    """A pod view with what these tests check: phase and conditions."""

    KIND: ClassVar[KindInfo] = lookup("v1", "Pod")
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: SimPodStatus = msgspec.field(default_factory=SimPodStatus)

    @property
    def node(self) -> str:
        return self.spec.node_name

    @property
    def ready(self) -> bool:
        return self.status.phase == "Running" and any(
            c.type == "Ready" and c.status == "True" for c in self.status.conditions
        )


class Watched(Generic[T]):
    """An informer recording its events; ``until`` waits on its changes (the testing kit)."""

    def __init__(self, informer: Informer[T]) -> None:
        self.informer = informer
        self.events: list[tuple[str, T]] = []
        informer.add_handler(
            EventHandler(
                on_add=lambda o, _initial: self._note("add", o),
                on_update=lambda _old, new: self._note("update", new),
                on_delete=lambda o: self._note("delete", getattr(o, "obj", o)),
            )
        )

    def _note(self, kind: str, obj: T) -> None:
        self.events.append((kind, obj))

    def all(self) -> list[T]:
        return sorted(self.informer.store.values(), key=lambda o: (o.namespace, o.name))

    def get(self, name: str, namespace: str = "") -> T | None:
        return self.informer.lister.get(namespace, name)

    async def until(self, condition: Callable[[], bool], patience: float = 300.0) -> None:
        await eventually(condition, on=[self.informer], timeout=patience)


@dataclass
class Sim:
    emu: Emulator
    client: Client
    pods: Watched[SimPod]
    nodes: Watched[Node]
    attachments: Watched[VolumeAttachment]
    pdbs: Watched[PodDisruptionBudget]

    def pods_on(self, node: str) -> list[SimPod]:
        return [p for p in self.pods.all() if p.node == node]

    def pod(self, name: str, namespace: str = "default") -> SimPod | None:
        return self.pods.get(name, namespace)

    async def until_ready(self, name: str, namespace: str = "default") -> SimPod:
        await self.pods.until(lambda: (p := self.pod(name, namespace)) is not None and p.ready)
        pod = self.pod(name, namespace)
        assert pod is not None
        return pod


@asynccontextmanager
async def simulated(
    options: ClusterSimulation | None = None,
) -> AsyncIterator[Sim]:
    """A simulated cluster with informers on the kinds the tests watch."""
    async with (
        serve_world(simulate=options or ClusterSimulation()) as served,
        with_informers(served) as sim,
    ):
        yield sim


@asynccontextmanager
async def with_informers(emu: Emulator) -> AsyncIterator[Sim]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    async with trio.open_nursery() as nursery:
        watched: list[Any] = []
        for kind in (SimPod, Node, VolumeAttachment, PodDisruptionBudget):
            informer: Informer[Any] = Informer(client, kind)
            watched.append(Watched(informer))
            nursery.start_soon(informer.run)
        for w in watched:
            await w.informer.wait_for_sync()
        yield Sim(emu, client, *watched)
        nursery.cancel_scope.cancel()


def write_times(
    emu: Emulator, resource: str, test: Callable[[str, dict[str, Any]], bool]
) -> list[float]:
    """The trio times of the store writes to ``resource`` (a store key such as ``"pods"``) that
    pass ``test(event type, object)``. Exact, unlike the moment an informer sees a change: while
    a watch event is in flight the mock clock may already have jumped to the next deadline."""
    times: list[float] = []

    def hook(rt: Any, ev: Any) -> None:
        if rt.key == resource and test(ev.type, ev.entry.obj):
            times.append(trio.current_time())

    emu.store.subscribe(hook)
    return times


# -- object builders


def node(name: str, never_ready: bool = False, **labels: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}
    if never_ready:
        md["annotations"] = {NEVER_READY_ANNOTATION: "true"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": md}


def pod(
    name: str,
    node_name: str = "",
    grace: int | None = None,
    claims: tuple[str, ...] = (),
    annotations: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    **labels: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if claims:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    if selector:
        spec["nodeSelector"] = selector
    md: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def claim(name: str, storage_class: str = "standard") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "storageClassName": storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def attachment_name(handle: str, node_name: str, driver: str = SIM_CSI_DRIVER) -> str:
    return "csi-" + hashlib.sha256(f"{handle}{driver}{node_name}".encode()).hexdigest()


def volume_handle(emu: Emulator, claim_name: str) -> str:
    pvc = emu.get("v1", "PersistentVolumeClaim", claim_name, "default")
    assert pvc is not None and pvc["spec"].get("volumeName")
    pv = emu.get("v1", "PersistentVolume", pvc["spec"]["volumeName"])
    assert pv is not None
    return str(pv["spec"]["csi"]["volumeHandle"])


def attached_names(n: Node | None) -> list[str]:
    return [] if n is None else [v.name for v in n.status.volumes_attached]


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
        await sim.client.delete(SimPod, "slow", "default")
        await sim.client.delete(SimPod, "quick", "default", grace_period_seconds=10)
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
        await sim.client.delete(SimPod, "db", "default", grace_period_seconds=0)
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
        await sim.client.delete(SimPod, "etcd-n1", "default")
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
