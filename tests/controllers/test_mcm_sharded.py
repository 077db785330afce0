"""MCM's controllers sharded over two managers, on the emulator and on a real kube-apiserver:
MachineDeployments split between the shards, their MachineSets and Machines follow them, every
machine boots and runs, and no object is reconciled by both shards. Then one replica leaves:
its deployments move to the other (the drain handshake), which scales them further.

Two managers share the test's trio run, each with its own leader election identity and shard
id; the simulated world runs beside them as in ``tests/helpers/mcm_world.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import trio
import trio.lowlevel
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.setup import setup as machine_setup
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as machineset_setup
from kubetrio.controllers.safety.setup import setup as overshooting_setup
from kubetrio.runtime.controller.controller import Controller, Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.gate import ShardGate
from kubetrio.runtime.sharding.labels import object_key, shard_label
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.ring import Ring
from kubetrio.sim.cloud import CloudApi
from kubetrio.sim.serving import serve_api
from kubetrio.sim.world import simulated_world
from kubetrio.testing import eventually, install_crds, run_manager
from kubetrio.testing.servers import ApiServer
from tests.helpers.deployments import deployment_doc
from tests.helpers.machines import MACHINE_API
from tests.helpers.mcm_world import FAST, TIMEOUT, Mcm

RING = "mcm"
SHARD = shard_label(RING)
SHARDS = ("shard-a", "shard-b")
SHARDED = ("machine", "machinetermination", "machineset", "machinedeployment")


@dataclass
class Ledger:
    """Every reconcile a shard's sharded controllers ran: (shard, kind, key, start, end)."""

    runs: list[tuple[str, str, ObjectKey, float, float]] = field(default_factory=list)

    def wrap(self, shard: str, controller: Controller[ObjectKey]) -> None:
        gate = controller.reconciler
        assert isinstance(gate, ShardGate), controller.name
        inner = gate.reconciler
        kind = gate.kind.__name__
        runs = self.runs

        class Recorded:
            async def reconcile(self, key: ObjectKey) -> Result:
                start = trio.current_time()
                try:
                    return await inner.reconcile(key)
                finally:
                    runs.append((shard, kind, key, start, trio.current_time()))

        gate.reconciler = Recorded()

    def shards_of(self, kind: str) -> dict[ObjectKey, set[str]]:
        found: dict[ObjectKey, set[str]] = {}
        for shard, k, key, _start, _end in self.runs:
            if k == kind:
                found.setdefault(key, set()).add(shard)
        return found

    def overlapping(self) -> list[tuple[Any, ...]]:
        """Reconciles of one object by two shards at overlapping times."""
        by_object: dict[tuple[str, ObjectKey], list[tuple[str, float, float]]] = {}
        for shard, kind, key, start, end in self.runs:
            by_object.setdefault((kind, key), []).append((shard, start, end))
        found = []
        for obj, runs in by_object.items():
            runs.sort(key=lambda run: run[1])
            for (shard, _start, end), (other, start, _end) in itertools.pairwise(runs):
                if shard != other and start < end:
                    found.append((obj, shard, other))
        return found


def config_for(server: ApiServer, cloud_url: str) -> ManagerConfig:
    options = MachineOptions(namespace=server.namespace, sim_cloud_url=cloud_url)
    return ManagerConfig(machine=options, workers={"machine": 5})


@asynccontextmanager
async def replica(
    server: ApiServer, shard: str, cloud_url: str, ledger: Ledger
) -> AsyncIterator[tuple[Manager, MachineContext]]:
    namespace = server.namespace
    contexts: list[MachineContext] = []
    config = config_for(server, cloud_url)

    def machines(manager: Manager, config: ManagerConfig) -> None:
        contexts.append(machine_setup(manager, config))

    # The fences prove a Lease on the process's real monotonic clock, the renewals run on the
    # mock clock: a renew deadline of 40 s keeps a loaded machine's real pauses between two
    # renewals within it (nothing here waits for a Lease to expire).
    timing: dict[str, Any] = {"lease_duration": 60.0, "renew_deadline": 40.0, "retry_period": 2.0}
    async with run_manager(
        server,
        machines,
        machineset_setup,
        deployment_setup,
        overshooting_setup,
        config=config,
        workers=config.workers,
        graceful_shutdown_timeout=5.0,
        leader_election=LeaderElectionOptions(
            namespace=namespace, name="mcm-leader", identity=shard, **timing
        ),
        sharding=ShardingOptions(ring=RING, namespace=namespace, shard_id=shard, **timing),
    ) as manager:
        for runnable in manager.runnables:
            if isinstance(runnable, Controller) and runnable.name in SHARDED:
                ledger.wrap(shard, runnable)
        yield manager, contexts[0]


def running(machines: list[Machine]) -> int:
    return sum(m.phase == PHASE_RUNNING and not m.metadata.deletion_timestamp for m in machines)


async def test_two_replicas_split_the_machines_and_none_is_reconciled_by_both(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    server = api_server
    admin = server.client()
    namespace = server.namespace
    await install_crds(admin, *crd_documents())
    ledger = Ledger()
    async with (
        simulated_world(server.client(qps=0), simulate=FAST) as world,
        trio.open_nursery() as nursery,
    ):
        world.cloud.url = await nursery.start(
            partial(serve_api, CloudApi(world.cloud), "the simulated cloud")
        )
        try:
            async with (
                replica(server, SHARDS[0], world.cloud.url, ledger) as (first, ctx),
                replica(server, SHARDS[1], world.cloud.url, ledger) as (second, _),
            ):
                c = Mcm(server, admin, world, first, ctx, server, admin)
                # Both shards in the ring before anything is created: no object moves yet.
                await eventually(
                    lambda: (
                        (
                            first.sharder is not None
                            and first.sharder.ring is not None
                            and first.sharder.ring.members == frozenset(SHARDS)
                        )
                        or (
                            second.sharder is not None
                            and second.sharder.ring is not None
                            and second.sharder.ring.members == frozenset(SHARDS)
                        )
                    ),
                    timeout=TIMEOUT,
                )
                await c.seed_class("small")
                # The ring hashes group/Kind/namespace/name: the namespace is the test's.
                ring = Ring(SHARDS)

                def owner_of(name: str) -> str | None:
                    meta: Any = type("Meta", (), {"namespace": namespace, "name": name})
                    return ring.owner(object_key(MachineDeployment, meta))

                names: list[str] = []
                n = 0
                while len({owner_of(x) for x in names}) < 2 or len(names) < 3:
                    names.append(c.name(f"pool{n}"))
                    n += 1
                for name in names:
                    await c.post(deployment_doc(name, replicas=2))

                def machines() -> list[Machine]:
                    return [m for m in ctx.machines.list() if m.metadata.namespace == namespace]

                await c.until(lambda: running(machines()) == 2 * len(names))

                sets = ctx.sets

                def settled() -> None:
                    for m in machines():
                        ref = m.metadata.controller_ref()
                        assert ref is not None
                        owner = sets.get(namespace, ref.name)
                        assert owner is not None
                        assert m.metadata.labels.get(SHARD) == owner.metadata.labels.get(SHARD)
                        deployment = owner.metadata.controller_ref()
                        assert deployment is not None
                        assert owner.metadata.labels.get(SHARD) == owner_of(deployment.name)

                await eventually(settled, timeout=TIMEOUT)
                by_shard = {s: 0 for s in SHARDS}
                for m in machines():
                    by_shard[m.metadata.labels[SHARD]] += 1
                assert all(by_shard.values()), by_shard
                for kind in ("Machine", "MachineSet", "MachineDeployment"):
                    twice = {k: s for k, s in ledger.shards_of(kind).items() if len(s) > 1}
                    assert not twice, (kind, twice)
                assert not ledger.overlapping()

                # The second replica leaves: its deployments move to the first, which owns
                # them and scales them on.
                moved = [name for name in names if owner_of(name) == SHARDS[1]]
                second.stop()
                await trio.lowlevel.checkpoint()  # the manager's stop reaches its nursery
                for name in moved:
                    await c.merge_patch(
                        "MachineDeployment", MACHINE_API, name, {"spec": {"replicas": 3}}
                    )

                def all_on_first() -> bool:
                    ms = machines()
                    return running(ms) == 2 * len(names) + len(moved) and all(
                        m.metadata.labels.get(SHARD) == SHARDS[0] for m in ms
                    )

                await c.until(all_on_first)
                for s in first.cache.informer(MachineSet, namespace=namespace).lister.list():
                    assert s.metadata.labels.get(SHARD) == SHARDS[0]
                assert not ledger.overlapping(), ledger.overlapping()
                first_runs = {
                    key
                    for shard, kind, key, _s, _e in ledger.runs
                    if shard == SHARDS[0] and kind == "MachineDeployment"
                }
                assert {ObjectKey(namespace, name) for name in moved} <= first_runs
        finally:
            for vm in list(world.cloud.vms.values()):
                await admin.delete(Node, vm.node_name, missing_ok=True)
            nursery.cancel_scope.cancel()
