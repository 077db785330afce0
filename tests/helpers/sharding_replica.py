"""One replica of a sharded controller, as its own process, for the sharding process tests:

    python -m tests.helpers.sharding_replica KUBECONFIG NAMESPACE ID [plain|fast|shard|sharder]

A manager with leader election and sharding (lease 4 s, renew deadline 3 s, retry 1 s) runs
the ``stamp`` controller over the namespace's ConfigMaps: it writes ``data.seen = data.want``
and ``data.shard = SHARD_ID`` through the shard's fenced client. Its client's User-Agent ends
with the shard id (``<id>/shard`` for the shard's own writes), so the API server's audit log
names the replica, and the role, of every request. SIGTERM
stops it gracefully (exit 0); losing its shard Lease ends it with exit 1. ``plain`` runs the
same controller unsharded (a leader-elected singleton: the benchmark's baseline); ``fast``
and ``plain`` lift the client's rate limit, so a benchmark measures the replicas, not the
limiter. ``shard`` is ``fast`` without the sharder (``run_sharder=False``), and ``sharder``
runs the ring's sharder alone (as ``kubetrio sharder`` does, leader-elected on a Lease of its
own): the benchmark runs them apart to count the sharder's CPU and memory apart from the
shards'.
"""

from __future__ import annotations

import sys

import trio

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.client.useragent import user_agent
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions, LeadershipLost
from kubetrio.runtime.manager.allocator import HeapTrimmer
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import shard_label
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.sharder import ShardedKind

RING = "stamps"
LEADER_LEASE = "stamps-leader"
TIMING = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 1.0}
BENCH_TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
WORK = 0.05  # seconds a reconcile takes before it writes
# A benchmark's replicas trim their heap as ``kubetrio run`` does, but every few seconds, so
# the RSS it reads after a run is the process at rest (``TRIM_EVERY`` after the run at most).
TRIM_EVERY = 3.0


class Stamp:
    def __init__(self, manager: Manager, namespace: str, work: float = WORK) -> None:
        assert manager.shard is not None
        self.work = work
        self.client = manager.shard.client
        self.shard_id = manager.shard.id
        self.informer = manager.cache.informer(
            ConfigMap, namespace=namespace, label_selector=f"{shard_label(RING)}={self.shard_id}"
        )

    async def reconcile(self, key: ObjectKey) -> Result:
        cm = self.informer.lister.get(key.namespace, key.name)
        if cm is None:
            return Result()
        if self.work:
            await trio.sleep(self.work)
        want = cm.data.get("want", "")
        if cm.data.get("seen") != want or cm.data.get("shard") != self.shard_id:
            await self.client.patch(
                ConfigMap,
                key.name,
                {"data": {"seen": want, "shard": self.shard_id}},
                namespace=key.namespace,
            )
        return Result()


async def main(kubeconfig: str, namespace: str, shard_id: str, mode: str = "") -> int:
    bench = mode in ("plain", "fast", "shard", "sharder")
    # A benchmark keeps the default timing: a loaded machine must not cost a replica its Lease.
    timing = BENCH_TIMING if bench else TIMING
    client = Client.from_kubeconfig(kubeconfig, component=shard_id, qps=0.0 if bench else 20.0)
    if mode == "plain":
        return await singleton(client, namespace, shard_id)
    if mode == "sharder":
        return await sharder(client, namespace, shard_id)
    manager = Manager(
        client,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=LeaderElectionOptions(
            namespace=namespace, name=LEADER_LEASE, identity=shard_id, **timing
        ),
        sharding=ShardingOptions(
            ring=RING,
            namespace=namespace,
            shard_id=shard_id,
            sync_period=30.0,
            run_sharder=mode != "shard",
            **timing,
        ),
        graceful_shutdown_timeout=5.0,
    )
    # The shard's writes end their User-Agent with "<id>/shard", the sharder's (on the leader)
    # with "<id>": the audit log tells a shard's own writes from the ring's bookkeeping.
    assert manager.shard is not None
    manager.shard.client.user_agent = user_agent(f"{shard_id}/shard")
    manager.controller("stamp").for_(ConfigMap, namespace=namespace).workers(4).sharded().complete(
        Stamp(manager, namespace, 0.0 if bench else WORK)
    )
    if bench:
        manager.add(HeapTrimmer(TRIM_EVERY))
    try:
        await manager.run()
    except LeadershipLost as lost:
        print(f"lost its lease: {lost}", file=sys.stderr)
        return 1
    return 0


class Plain:
    """``Stamp`` without a shard: the whole namespace, written through the leader's client."""

    def __init__(self, manager: Manager, namespace: str, shard_id: str) -> None:
        self.client = manager.client
        self.shard_id = shard_id
        self.work = 0.0
        self.informer = manager.cache.informer(ConfigMap, namespace=namespace)

    reconcile = Stamp.reconcile


async def singleton(client: Client, namespace: str, shard_id: str) -> int:
    manager = Manager(
        client,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=LeaderElectionOptions(
            namespace=namespace, name=LEADER_LEASE, identity=shard_id, **BENCH_TIMING
        ),
    )
    manager.controller("stamp").for_(ConfigMap, namespace=namespace).workers(4).complete(
        Plain(manager, namespace, shard_id)  # type: ignore[arg-type]
    )
    manager.add(HeapTrimmer(TRIM_EVERY))
    await manager.run()
    return 0


async def sharder(client: Client, namespace: str, identity: str) -> int:
    """The ring's sharder alone, over the namespace's ConfigMaps."""
    manager = Manager(
        client,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=LeaderElectionOptions(
            namespace=namespace, name=f"{LEADER_LEASE}-sharder", identity=identity, **BENCH_TIMING
        ),
    )
    options = ShardingOptions(
        ring=RING, namespace=namespace, shard_id=identity, sync_period=30.0, **BENCH_TIMING
    )
    manager.add_sharder(options, [ShardedKind(ConfigMap, namespace=namespace)])
    manager.add(HeapTrimmer(TRIM_EVERY))
    await manager.run()
    return 0


if __name__ == "__main__":
    sys.exit(trio.run(main, *sys.argv[1:5]))
