"""The simulated storage service's state and rules: a StorageOS-like cluster of storage nodes
that follows the emulator's Kubernetes Nodes, on the emulator's trio clock.

What it keeps of StorageOS's behaviour (never its code):

* **Registration.** When a Kubernetes Node is Ready and has no storage node yet, one is
  registered (a fresh UUID) and the Node's ``csi.volume.kubernetes.io/nodeid`` annotation gets
  ``{"<driver>": "<id>"}`` merged in, as the CSI node plugin's registration would. A malformed
  annotation is left alone.
* **Heartbeats.** A storage node stays online while its Kubernetes Node exists and is Ready.
  Once that stops (the Node was deleted, or its kubelet went away), the node is marked offline
  after a delay drawn from ``offline_after`` (20 to 30 s), and its lock expires ``lock_seconds``
  (30 s) after that. A Node that comes back Ready brings its storage node back online.
* **Failover.** A volume whose master is on an offline node and that has a replica on an online
  node gets that replica promoted.
* **Deletion rules.** Unknown id → 404. Online → 409 "node still in use". Offline but locked →
  423 "node lock has not yet expired". Still the master of a volume deployment without
  replicas → 409 "node still in use" (deleting the volume unblocks it). Otherwise the node is
  forgotten and dropped from every volume's replicas.

Health and locks are computed from the clock when asked (no timers), and ``sync`` runs before
every answer, so the API always reflects the store as it is at that instant.

**Cost.** While ``run`` follows the store, a Node change only marks that Node's name, and
``sync`` looks at the marked Nodes alone: registering the 10 000th Node costs what the first
did (a full pass of every Node on each change made a cluster's start quadratic). Without
``run`` (a service driven by hand), ``sync`` cannot know what changed and reads every Node.
Storage nodes are indexed by name and by id, and failover only looks at volumes once some
storage node lost its Kubernetes Node. ``examined`` counts the Nodes ``sync`` has read, so
a test can check that cost, e.g.::

    before = storage.examined
    emu.create(node("n-10001"))          # one Node changes...
    await storage.wait_for(lambda: storage.examined > before)
    assert storage.examined - before == 1  # ...one Node read
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.objects import Change, Obj, Objects, condition
from kubetrio.sim.storage.faults import Faults

# StorageOS's own facts, restated here because the simulated service is a peer of the storage
# controllers, not their client: its CSI driver name and the reasons its api-manager gives for
# refusing to delete a node (the controllers read them off the wire).
DEFAULT_CSI_DRIVER = "csi.storageos.com"
IN_USE_REASON = "node still in use"
LOCKED_REASON = "node lock has not yet expired"

log = logging.getLogger("kubetrio.storage.sim")

NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
ONLINE = "online"
OFFLINE = "offline"


class SimError(Exception):
    """A refusal the API turns into an HTTP status with ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class SimNode:
    id: str
    name: str
    registered_at: float
    offline_at: float | None = None  # set once heartbeats stop; None while alive
    lock_expires_at: float | None = None

    def health(self, now: float) -> str:
        return OFFLINE if self.offline_at is not None and now >= self.offline_at else ONLINE

    def locked(self, now: float) -> bool:
        return self.lock_expires_at is None or now < self.lock_expires_at

    def to_json(self, now: float) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "health": self.health(now)}


@dataclass(slots=True)
class SimVolume:
    id: str
    namespace: str
    name: str
    master: str  # storage node name
    replicas: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "namespace": self.namespace,
            "name": self.name,
            "master": self.master,
            "replicas": list(self.replicas),
        }


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request of the controllers' API, as answered (tests read timings from these)."""

    at: float
    op: str  # "list" or "delete"
    status: int
    node: str = ""  # the node a delete was for ("" when its id was unknown)
    reason: str = ""


class SimulatedStorage:
    url = ""  # its backend URL, once served (``serve_storage_sim``)

    def __init__(
        self,
        objects: Objects,
        *,
        csi_driver: str = DEFAULT_CSI_DRIVER,
        offline_after: tuple[float, float] = (20.0, 30.0),
        lock_seconds: float = 30.0,
        seed: int = 0,
    ) -> None:
        low, high = offline_after
        if not 0 <= low <= high or lock_seconds < 0:
            raise ValueError("offline_after must be 0 <= low <= high; lock_seconds >= 0")
        self.objects = objects
        self.csi_driver = csi_driver
        self.offline_after = (float(low), float(high))
        self.lock_seconds = float(lock_seconds)
        self.nodes: dict[str, SimNode] = {}  # by name
        self.volumes: dict[str, SimVolume] = {}  # by id
        self.faults = Faults()
        self.requests: list[RequestRecord] = []
        self._rng = random.Random(seed)
        self._serial = 0
        self._wakeup = trio.Event()
        self._changed = trio.Event()
        self._malformed_logged: set[str] = set()
        self._by_id: dict[str, SimNode] = {}
        # Names of storage nodes marked offline (their Kubernetes Node is gone or not Ready):
        # the only masters failover has to look at.
        self._lost: set[str] = set()
        # Names of Nodes changed since the last sync; None: unknown (not following the store),
        # so sync reads them all.
        self._dirty: set[str] | None = None
        self.examined = 0  # Kubernetes Nodes read by sync, ever (the cost tests read it)

    # -- reading, for tests and demos

    def node(self, name: str) -> SimNode | None:
        return self.nodes.get(name)

    def by_id(self, node_id: str) -> SimNode | None:
        return self._by_id.get(node_id)

    def records(self, op: str | None = None, node: str | None = None) -> list[RequestRecord]:
        return [
            r
            for r in self.requests
            if (op is None or r.op == op) and (node is None or r.node == node)
        ]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds, re-checked after every request and every change of
        state (not on time passing: health is computed from the clock, so compare times)."""
        while not predicate():
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    # -- following the Kubernetes Nodes

    async def run(self) -> None:
        """Register Ready nodes and notice lost ones as the store changes; until cancelled."""
        await self.objects.ready()

        def on_change(rt: KindInfo, event: Change) -> None:
            if rt == self.objects.nodes:
                if self._dirty is not None:
                    self._dirty.add(event.obj["metadata"]["name"])
                self._wakeup.set()
                # Waiters re-check too: what they wait for may be a Node this service wrote,
                # now confirmed by the server.
                self._notify()

        unsubscribe = self.objects.subscribe(on_change)
        try:
            self.sync()  # the first pass reads every Node; from here on, only changed ones
            self._dirty = set()
            while True:
                self._wakeup = trio.Event()
                self.sync()
                await self._wakeup.wait()
        finally:
            unsubscribe()
            self._dirty = None

    def sync(self) -> None:
        """Bring the storage nodes in line with the Kubernetes Nodes as they are now (those
        changed since the last sync, while ``run`` follows the store; else all of them)."""
        now = trio.current_time()
        if self._dirty is None:
            names = {n["metadata"]["name"] for n in self.objects.all(self.objects.nodes)}
            names.update(self.nodes)
        else:
            names, self._dirty = self._dirty, set()
        for name in sorted(names):  # a stable order: ids come from a seeded generator
            self._sync_one(name, now)
        self._fail_over(now)

    def _sync_one(self, name: str, now: float) -> None:
        node = self.objects.get(self.objects.nodes, "", name)
        self.examined += 1
        alive = (
            node is not None
            and condition(node, "Ready") == "True"
            and not node["metadata"].get("deletionTimestamp")
        )
        storage_node = self.nodes.get(name)
        if node is not None and alive:
            if storage_node is None:
                storage_node = self._register(name, now)
            elif storage_node.offline_at is not None:
                log.info("storage node back online node=%s", name)
                storage_node.offline_at = storage_node.lock_expires_at = None
                self._lost.discard(name)
                self._notify()
            self._annotate(node, storage_node)
        elif storage_node is not None and storage_node.offline_at is None:
            low, high = self.offline_after
            storage_node.offline_at = now + self._rng.uniform(low, high)
            storage_node.lock_expires_at = storage_node.offline_at + self.lock_seconds
            self._lost.add(name)
            log.info(
                "storage node lost its kubernetes node node=%s offline_in=%.1fs",
                name,
                storage_node.offline_at - now,
            )
            self._notify()

    def _register(self, name: str, now: float) -> SimNode:
        node_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        node = self.nodes[name] = self._by_id[node_id] = SimNode(node_id, name, now)
        log.info("storage node registered node=%s id=%s", name, node_id)
        self._notify()
        return node

    def _annotate(self, k8s_node: Obj, storage_node: SimNode) -> None:
        name = storage_node.name
        raw = (k8s_node["metadata"].get("annotations") or {}).get(NODE_ID_ANNOTATION)
        ids: Any = {}
        if raw is not None:
            try:
                ids = json.loads(raw)
            except ValueError:
                ids = None
            if not isinstance(ids, dict):
                if name not in self._malformed_logged:
                    self._malformed_logged.add(name)
                    log.warning(
                        "malformed %s annotation left alone node=%s", NODE_ID_ANNOTATION, name
                    )
                return
        if ids.get(self.csi_driver) == storage_node.id:
            return
        value = json.dumps({**ids, self.csi_driver: storage_node.id}, separators=(",", ":"))

        def change(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[NODE_ID_ANNOTATION] = value

        self.objects.mutate(self.objects.nodes, k8s_node, change)

    def _fail_over(self, now: float) -> None:
        if not self._lost:
            return  # every master is online
        for volume in self.volumes.values():
            master = self.nodes.get(volume.master)
            if master is None or master.health(now) == ONLINE:
                continue
            target = next(
                (
                    r
                    for r in volume.replicas
                    if (n := self.nodes.get(r)) is not None and n.health(now) == ONLINE
                ),
                None,
            )
            if target is not None:
                volume.replicas.remove(target)
                volume.master = target
                log.info("volume failed over volume=%s master=%s", volume.key, target)

    # -- the controllers' API

    def list_nodes(self) -> list[dict[str, Any]]:
        now = trio.current_time()
        return [node.to_json(now) for node in sorted(self.nodes.values(), key=lambda n: n.name)]

    def delete_node(self, node_id: str) -> SimNode:
        """Apply the deletion rules; raises ``SimError`` with the refusal."""
        now = trio.current_time()
        node = self.by_id(node_id)
        if node is None:
            raise SimError(404, f"node {node_id} not found")
        if node.health(now) == ONLINE:
            raise SimError(409, f"{IN_USE_REASON}: node {node.name} is online")
        if node.locked(now):
            raise SimError(423, f"{LOCKED_REASON} (node {node.name})")
        blocking = [
            v.key for v in self.volumes.values() if v.master == node.name and not v.replicas
        ]
        if blocking:
            raise SimError(
                409,
                f"{IN_USE_REASON}: node {node.name} holds the master of "
                f"{', '.join(sorted(blocking))} without replicas",
            )
        del self.nodes[node.name]
        del self._by_id[node.id]
        self._lost.discard(node.name)
        for volume in self.volumes.values():
            if node.name in volume.replicas:
                volume.replicas.remove(node.name)
        log.info("storage node deleted node=%s id=%s", node.name, node.id)
        self._notify()
        return node

    def record(self, op: str, status: int, node: str = "", reason: str = "") -> None:
        self.requests.append(RequestRecord(trio.current_time(), op, status, node, reason))
        self._notify()

    # -- administration (tests, demos)

    def add_node(self, name: str, *, offline: bool = False, lock_expired: bool = False) -> SimNode:
        """A storage node that did not come from a Ready Kubernetes Node (or one whose Node the
        service never saw). ``offline``: already marked offline; ``lock_expired``: and its
        lock already gone, so it can be deleted at once."""
        if not name:
            raise SimError(400, "name: must not be empty")
        if name in self.nodes:
            raise SimError(409, f"storage node {name} already exists")
        now = trio.current_time()
        node = self._register(name, now)
        if offline or lock_expired:
            node.offline_at = now
            node.lock_expires_at = now if lock_expired else now + self.lock_seconds
            self._lost.add(name)
        if self._dirty is not None:
            self._dirty.add(name)  # no Node may stand behind it: the next sync decides
        self.sync()
        return node

    def add_volume(
        self, name: str, master: str, replicas: list[str] | None = None, namespace: str = "default"
    ) -> SimVolume:
        replicas = list(replicas or [])
        for where, node in [("master", master), *(("replicas", r) for r in replicas)]:
            if node not in self.nodes:
                raise SimError(400, f"{where}: no storage node {node!r}")
        if master in replicas or len(set(replicas)) != len(replicas):
            raise SimError(400, "replicas: must be distinct nodes other than the master")
        self._serial += 1
        volume = SimVolume(f"vol-{self._serial:05d}", namespace, name, master, replicas)
        self.volumes[volume.id] = volume
        log.info(
            "volume created volume=%s master=%s replicas=%d", volume.key, master, len(replicas)
        )
        self._notify()
        return volume

    def delete_volume(self, volume_id: str) -> None:
        if self.volumes.pop(volume_id, None) is None:
            raise SimError(404, f"volume {volume_id} not found")
        self._notify()
