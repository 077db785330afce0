"""Sharding proven end to end: manager replicas, each with a client of its own through a TCP
link the test can cut, share a sharded controller's ConfigMaps. One is killed (its link cut,
then cancelled: its Lease is neither renewed nor released), a fourth joins, one stops
gracefully. After each change every object is reconciled again by the one shard that owns it,
and the reconciles recorded (in this process, on one clock) never overlap between two shards
for the same object.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field

import pytest
import trio

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions, LeadershipLost
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import drain_label, shard_label
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.testing.link import Link, tcp_link
from kubetrio.testing.servers import ApiServer
from kubetrio.testing.waiting import eventually

pytestmark = pytest.mark.slow

RING = "stamps"
OBJECTS = 24
LEASE = 4.0  # seconds: the shard and leader Leases' duration
SHARD = shard_label(RING)
DRAIN = drain_label(RING)
WORK = 0.3  # seconds each reconcile takes: long enough for a careless move to overlap one


@dataclass
class Ledger:
    """Every reconcile that got its way: (object, shard, start, end) on the test's clock. One
    that failed (a partitioned shard's write refused by its fence or lost on the cut link) left
    no mark on the object and is not recorded."""

    spans: list[tuple[str, str, float, float]] = field(default_factory=list)

    def overlaps(self) -> list[str]:
        by_object: dict[str, list[tuple[float, float, str]]] = {}
        for name, shard, start, end in self.spans:
            by_object.setdefault(name, []).append((start, end, shard))
        found = []
        for name, spans in by_object.items():
            spans.sort()
            for (_s1, e1, a), (s2, _e2, b) in itertools.pairwise(spans):
                if a != b and s2 < e1:
                    found.append(f"{name}: {a} until {e1:.2f}, {b} from {s2:.2f}")
        return found


class Stamp:
    """Writes ``data.seen = data.want`` and ``data.shard``: who reconciled which version."""

    def __init__(self, manager: Manager, ledger: Ledger, namespace: str) -> None:
        assert manager.shard is not None
        self.shard = manager.shard
        self.informer = manager.cache.informer(
            ConfigMap, namespace=namespace, label_selector=f"{SHARD}={manager.shard.id}"
        )
        self.ledger = ledger

    async def reconcile(self, key: ObjectKey) -> Result:
        start = trio.current_time()
        cm = self.informer.lister.get(key.namespace, key.name)
        if cm is None:
            return Result()
        await trio.sleep(WORK)
        want = cm.data.get("want", "")
        if cm.data.get("seen") != want or cm.data.get("shard") != self.shard.id:
            await self.shard.client.patch(
                ConfigMap,
                key.name,
                {"data": {"seen": want, "shard": self.shard.id}},
                namespace=key.namespace,
            )
        self.ledger.spans.append((key.name, self.shard.id, start, trio.current_time()))
        return Result()


def acknowledged(manager: Manager) -> float:
    value = manager.registry.get_sample_value(
        "kubetrio_sharding_drains_acknowledged_total",
        {"ring": RING, "shard": manager.shard.id},  # type: ignore[union-attr]
    )
    return value or 0.0


def counts_of(watched: Informer[ConfigMap], shard: str) -> int:
    return sum(cm.metadata.labels.get(SHARD) == shard for cm in watched.lister.list())


@dataclass
class Replica:
    name: str
    link: Link
    manager: Manager
    scope: trio.CancelScope
    done: trio.Event


def server_port(server: ApiServer) -> tuple[str, int]:
    url = server.emulator.url if server.emulator else server.control_plane.url  # type: ignore[union-attr]
    scheme, _, port = url.rpartition(":")
    return scheme.split(":")[0], int(port)


async def run_replica(
    server: ApiServer, name: str, ledger: Ledger, *, task_status: trio.TaskStatus[Replica]
) -> None:
    scheme, port = server_port(server)
    namespace = server.namespace
    async with tcp_link(port) as link:
        client = Client.from_kubeconfig(str(server.kubeconfig_path), server=link.url(scheme))
        manager = Manager(
            client,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            leader_election=LeaderElectionOptions(
                namespace=namespace,
                name="stamps-leader",
                identity=name,
                lease_duration=LEASE,
                renew_deadline=3.0,
                retry_period=1.0,
            ),
            sharding=ShardingOptions(
                ring=RING,
                namespace=namespace,
                shard_id=name,
                lease_duration=LEASE,
                renew_deadline=3.0,
                retry_period=1.0,
                sync_period=30.0,
            ),
            graceful_shutdown_timeout=5.0,
        )
        manager.controller("stamp").for_(ConfigMap, namespace=namespace).workers(
            4
        ).sharded().complete(Stamp(manager, ledger, namespace))
        done = trio.Event()
        with trio.CancelScope() as scope:
            task_status.started(Replica(name, link, manager, scope, done))
            with contextlib.suppress(LeadershipLost):  # cut off: it stepped down, as it must
                await manager.run(handle_signals=False)
        done.set()


async def test_replicas_share_configmaps_through_kill_join_and_leave(api_server: ApiServer) -> None:
    server = api_server
    namespace = server.namespace
    admin = server.client()
    ledger = Ledger()
    for index in range(OBJECTS):
        await admin.create(
            ConfigMap,
            {"metadata": {"name": f"cm-{index:02}"}, "data": {"want": "0"}},
            namespace=namespace,
        )
    watched: Informer[ConfigMap] = Informer(admin, ConfigMap, namespace=namespace)
    replicas: dict[str, Replica] = {}
    timings: dict[str, float] = {}

    async def settled(step: str, version: str, live: set[str], within: float) -> None:
        started = trio.current_time()

        def check() -> None:
            items = watched.lister.list()
            assert len(items) == OBJECTS
            owners = {cm.metadata.labels.get(SHARD) for cm in items}
            assert live <= owners, f"shards without objects: {live - owners}"
            for cm in items:
                labels = cm.metadata.labels
                assert labels.get(SHARD) in live, (cm.metadata.name, labels)
                assert DRAIN not in labels, (cm.metadata.name, labels)
                assert cm.data.get("seen") == version, (cm.metadata.name, cm.data)
                assert cm.data.get("shard") == labels[SHARD], (cm.metadata.name, cm.data)

        await eventually(check, on=[watched], timeout=within)
        timings[step] = trio.current_time() - started

    async def bump(version: str) -> None:
        for cm in watched.lister.list():
            await admin.patch(
                ConfigMap, cm.metadata.name, {"data": {"want": version}}, namespace=namespace
            )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watched.run)
        await watched.wait_for_sync()
        for name in ("shard-a", "shard-b", "shard-c"):
            replicas[name] = await nursery.start(run_replica, server, name, ledger)
        await settled("start", "0", {"shard-a", "shard-b", "shard-c"}, 4 * LEASE)
        counts = {
            name: sum(cm.metadata.labels[SHARD] == name for cm in watched.lister.list())
            for name in replicas
        }
        assert all(counts.values()), counts

        # Kill one: cut off, then cancelled; its Lease is neither renewed nor released.
        victim = replicas.pop("shard-b")
        victim.link.cut()
        victim.scope.cancel()
        await bump("1")
        await settled("kill", "1", {"shard-a", "shard-c"}, 3 * LEASE)

        # Partition one (a freeze, as far as the others can tell): it keeps running, cannot
        # renew, stops acting at its renew deadline and exits; the sharder takes its Lease over.
        partitioned = replicas.pop("shard-c")
        partitioned.link.cut()
        await bump("1b")
        await settled("partition", "1b", {"shard-a"}, 3 * LEASE)
        await partitioned.done.wait()
        replicas["shard-c"] = await nursery.start(run_replica, server, "shard-c", ledger)
        await settled("rejoin", "1b", {"shard-a", "shard-c"}, 3 * LEASE)

        let_go_before = sum(acknowledged(r.manager) for r in replicas.values())
        # A fourth joins: objects move to it through the drain handshake.
        replicas["shard-d"] = await nursery.start(run_replica, server, "shard-d", ledger)
        await bump("2")
        await settled("join", "2", {"shard-a", "shard-c", "shard-d"}, 2 * LEASE)
        assert any(cm.metadata.labels[SHARD] == "shard-d" for cm in watched.lister.list())
        # They moved by the handshake: the shards that gave objects up let go of them.
        let_go = sum(acknowledged(r.manager) for r in replicas.values()) - let_go_before
        assert let_go == counts_of(watched, "shard-d"), let_go

        # One leaves gracefully: it releases its Lease and its objects move at once.
        leaving = replicas.pop("shard-a")
        leaving.manager.stop()
        await leaving.done.wait()
        await bump("3")
        await settled("leave", "3", {"shard-c", "shard-d"}, 2 * LEASE)

        for replica in replicas.values():
            replica.manager.stop()
        for replica in replicas.values():
            await replica.done.wait()
        nursery.cancel_scope.cancel()
    print(
        server.kind,
        "objects per shard at start:",
        counts,
        "settle times:",
        {k: round(v, 2) for k, v in timings.items()},
        "reconciles:",
        len(ledger.spans),
    )
    assert not ledger.overlaps()
