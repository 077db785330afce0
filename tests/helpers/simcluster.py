"""The simulated cluster served by an emulator on the test's clock, its informers, and builders for
the nodes, pods, claims and workloads the simulated cluster tests, the drain tests and the
machine tests place on it."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import msgspec
import trio

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
    """A simulated cluster with informers on the kinds the tests watch; the simulation is a
    client of the emulator's API, as ``kubetrio simulate`` is of any server's."""
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


def template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def replicaset(name: str, replicas: int, app: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app or name}},
            "template": template(app or name),
        },
    }


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "storageClassName": "standard",
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def daemonset(name: str, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    tmpl = template(name)
    if node_selector:
        tmpl["spec"]["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": tmpl},
    }


def pdb(name: str, app: str, **budget: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, **budget},
    }


def app_pods(sim: Sim, app: str) -> list[SimPod]:
    return [p for p in sim.pods.all() if p.metadata.labels.get("app") == app]


def ready_pods(sim: Sim, app: str) -> list[SimPod]:
    return [p for p in app_pods(sim, app) if p.ready and not p.deleting]
