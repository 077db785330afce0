"""More of Gardener MCM end to end on the emulator and on a real kube-apiserver, on the harness
of ``test_mcm_both_servers``: a drain that moves volume pods and their volumes, a
MachineDeployment rollback, the safety controller's overshooting freeze and its freeze during an
API outage, the storage node-delete and GC controllers, and two clusters. Every write goes
through the API; every wait wakes on informer or service events, on the mock clock. The
scenarios marked ``bench`` are too long for CI's budget: ``tests/bench/mcm_suites.py`` (or
``pytest --bench``) runs them.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node, PersistentVolume
from kubetrio.api.machine import PHASE_FAILED, PHASE_UNKNOWN, Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.safety.apiserver import HEALTH_TIMEOUT_RESET
from kubetrio.controllers.safety.overshooting import OVERSHOOTING_REPLICA_COUNT, is_frozen
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.duration import Duration
from kubetrio.sim import serve_world
from kubetrio.sim.storage import NODE_ID_ANNOTATION
from kubetrio.testing.servers import ApiServer
from tests.helpers.machines import MACHINE_API, machine_doc
from tests.helpers.machinesets import machine_set_doc
from tests.helpers.mcm_world import (
    Mcm,
    app_pods_on,
    mcm_on,
    ready,
    running,
    running_machines,
    server_url,
)
from tests.helpers.outage import Forwarder
from tests.helpers.simcluster import replicaset, statefulset

REVISION = "deployment.kubernetes.io/revision"


async def two_running(c: Mcm, *names: str) -> None:
    for name in names:
        await c.post(machine_doc(name))
    await c.until(lambda: all(running(c.machine(n)) and ready(c.node(n)) for n in names))


def attached_on(c: Mcm, volume: str) -> set[str]:
    """The nodes the volume is attached to, by its VolumeAttachments."""
    return {
        va.spec.node_name
        for va in c.ctx.drainer.cache.attachments.list()
        if va.spec.source.persistent_volume_name == volume and va.status.attached
    }


def reported_on(node: Node | None) -> set[str]:
    """The volumes the node's status says are attached (by their unique names)."""
    return set() if node is None else {v.name for v in node.status.volumes_attached}


async def test_a_drain_moves_volume_pods_and_their_volumes_are_attached_on_the_new_node(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        gone, stays = c.name("a"), c.name("b")
        await two_running(c, gone, stays)
        await c.post(statefulset("db", 2))

        def volumes() -> dict[str, str]:
            """The db pods' volumes, by pod name, once their claims are bound."""
            claims = c.ctx.drainer.cache.claims
            found = {}
            for pod in ("db-0", "db-1"):
                claim = claims.get(c.target_ns, f"data-{pod}")
                if claim is not None and claim.spec.volume_name:
                    found[pod] = claim.spec.volume_name
            return found

        await c.until(
            lambda: (
                sum(map(len, app_pods_on(c, "db").values())) == 2
                and len(volumes()) == 2
                and all(attached_on(c, v) for v in volumes().values())
            )
        )
        [moved] = app_pods_on(c, "db").get(gone, [None])
        assert moved is not None, "the scheduler spreads the pods"
        volume = volumes()[moved]
        pv = await c.target_client.get(PersistentVolume, volume)
        assert pv.spec.csi is not None
        handle = pv.spec.csi.volume_handle
        assert attached_on(c, volume) == {gone}
        vm = c.machine(gone)
        assert vm is not None
        # What the cache shows when the VM is seen gone: its volume's attachment must be gone
        # by then (the drain waits for the detach before the VM is deleted).
        left_attached: list[set[str]] = []

        def moved_and_attached() -> bool:
            if vm.spec.provider_id not in c.world.cloud.vms and not left_attached:
                left_attached.append(attached_on(c, volume) & {gone})
            pods = app_pods_on(c, "db")
            return (
                c.machine(gone) is None
                and sorted(pods.get(stays, [])) == ["db-0", "db-1"]
                and attached_on(c, volume) == {stays}
                and any(name.endswith(f"^{handle}") for name in reported_on(c.node(stays)))
            )

        await c.client.delete(Machine, gone, namespace=c.ns)
        await c.until(moved_and_attached)
        assert left_attached == [set()], "detached before the VM was deleted"
        assert c.node(gone) is None
        claim = c.ctx.drainer.cache.claims.get(c.target_ns, f"data-{moved}")
        assert claim is not None and claim.spec.volume_name == volume  # the same volume


@pytest.mark.bench
async def test_a_deployment_rolls_back_to_its_first_revision(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        pool = await c.pool(1)

        def all_of(machine_class: str) -> bool:
            machines = running_machines(c, name=pool)
            return (
                len(c.machines()) == 1
                and len(machines) == 1
                and machines[0].spec.class_.name == machine_class
            )

        await c.until(lambda: all_of("small"))
        [first] = c.machine_sets()
        new_class = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "large"}}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": new_class})
        await c.until(lambda: all_of("large"))

        rollback = {"spec": {"rollbackTo": {"revision": 1}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, rollback)
        await c.until(lambda: all_of("small"))
        deployment = await c.client.get(MachineDeployment, pool, namespace=c.ns)
        assert deployment.spec.rollback_to is None
        assert deployment.spec.template.spec.class_.name == "small"
        assert deployment.metadata.annotations[REVISION] == "3"
        again = await c.client.get(MachineSet, first.metadata.name, namespace=c.ns)
        assert again.spec.replicas == 1  # the first set itself is scaled back up
        assert again.metadata.annotations[REVISION] == "3"
        assert again.metadata.annotations["deployment.kubernetes.io/revision-history"] == "1"


async def test_an_overshooting_set_is_frozen_until_its_surplus_is_gone(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    # A pass every 10 s rather than MCM's minute: the thaw waits for one.
    async with mcm_on(api_server, safety_overshooting_period=Duration(10)) as c:
        await c.seed_class("small")
        name = c.name("solo")
        await c.post(machine_set_doc(name, 1))
        await c.until(lambda: len(running_machines(c, set=name)) == 1)
        machine_set = await c.client.get(MachineSet, name, namespace=c.ns)
        owner = {
            "apiVersion": MACHINE_API,
            "kind": "MachineSet",
            "name": name,
            "uid": machine_set.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        # Alone, a set of 1 may have 2 * 1 + safetyUp 2 = 4 machines: 3 more overshoot.
        for i in range(3):
            extra = machine_doc(f"{name}-extra-{i}")
            extra["metadata"]["labels"] = {"set": name, "name": name}
            extra["metadata"]["ownerReferences"] = [owner]
            await c.post(extra)
        # The set's states as seen, (frozen, the Frozen condition's reason), each change once.
        states: list[tuple[bool, str | None]] = []

        def current() -> MachineSet | None:
            now = next((s for s in c.machine_sets() if s.metadata.name == name), None)
            if now is not None:
                condition = now.condition("Frozen")
                state = (is_frozen(now), condition.reason if condition is not None else None)
                if not states or states[-1] != state:
                    states.append(state)
            return now

        await c.until(
            lambda: current() is not None and (True, OVERSHOOTING_REPLICA_COUNT) in states
        )
        # The set's controller deletes the surplus; at the lower limit the next pass thaws it.
        await c.until(
            lambda: current() is not None and states[-1] == (False, None) and len(c.machines()) == 1
        )
        # The freeze writes its condition, then its label; the thaw takes them off in turn.
        assert (True, OVERSHOOTING_REPLICA_COUNT) in states, states
        assert len(running_machines(c, set=name)) == 1


async def test_a_deleted_machines_storage_node_goes_and_the_gc_removes_orphans(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server, storage=True, gc_delay=30) as c:
        storage = c.storage
        assert storage is not None
        # The service has its own address, never the API server's.
        assert storage.url.startswith("http://127.0.0.1:") and storage.url.endswith("/v1")
        orphan = c.name("orphan")  # a storage node whose Kubernetes Node is long gone
        storage.add_node(orphan, offline=True, lock_expired=True)
        await c.seed_class("small")
        gone, stays = c.name("a"), c.name("b")
        await two_running(c, gone, stays)

        def annotated(name: str) -> bool:
            node = c.node(name)
            return node is not None and NODE_ID_ANNOTATION in node.metadata.annotations

        await c.until(lambda: annotated(gone) and annotated(stays))
        assert storage.node(gone) is not None and storage.node(stays) is not None

        await c.client.delete(Machine, gone, namespace=c.ns)
        await storage.wait_for(lambda: storage.node(gone) is None)
        await storage.wait_for(lambda: storage.node(orphan) is None)  # the GC's first pass
        assert storage.node(stays) is not None
        deleted = [(r.node, r.status) for r in storage.records("delete")]
        assert sorted(deleted) == sorted([(gone, 200), (orphan, 200)])


async def test_machines_in_the_control_cluster_join_the_target_cluster(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    """The control cluster is an emulator of the test's own; the target cluster is the
    parametrised server, so on the real run the world, its Nodes, Pods, drains and bootstrap
    tokens are on the real kube-apiserver."""
    async with serve_world() as emu:
        control = ApiServer("emulator", emu.kubeconfig_path, "default", emulator=emu)
        async with mcm_on(control, target=api_server) as c:
            await c.seed_class("small")
            name = c.name("m")
            await c.post(machine_doc(name))
            await c.post(replicaset("web", 2))
            await c.until(
                lambda: (
                    running(c.machine(name))
                    and ready(c.node(name))
                    and len(app_pods_on(c, "web").get(name, [])) == 2
                )
            )
            assert await c.target_client.get_or_none(Node, name) is not None
            assert emu.get("v1", "Node", name) is None  # read in its store, not asked

            await c.client.delete(Machine, name, namespace=c.ns)
            await c.until(lambda: c.machine(name) is None and not app_pods_on(c, "web"))
            assert await c.target_client.get_or_none(Node, name) is None
            assert c.world.cloud.vms == {}
        # The control cluster was never asked about the target's kinds.
        asked = {key.split(" ", 1)[1].split("/")[0] for key in emu.counters.snapshot()}
        assert asked & {"nodes", "pods", "volumeattachments", "poddisruptionbudgets"} == set()
        assert {"machines", "machineclasses"} <= asked


@pytest.mark.bench
async def test_an_api_outage_freezes_the_machine_controller_and_resets_health_timeouts(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    """The manager reaches the server through a forwarder the test cuts (the simulated world
    and the test's own client go straight to it): frozen while it cannot reach the server,
    the machine controller does not fail a machine whose health timeout ran out meanwhile; on
    recovery the timeout starts again, and only its end fails the machine."""
    health_timeout = 60.0
    forwarder = Forwarder(server_url(api_server))
    async with trio.open_nursery() as nursery:
        await nursery.start(forwarder.serve)
        through = Client.from_kubeconfig(str(api_server.kubeconfig_path), server=forwarder.url)
        async with mcm_on(
            api_server, manager_client=through, health_timeout=Duration(health_timeout)
        ) as c:
            await c.seed_class("small")
            name = c.name("m")
            await c.post(machine_doc(name))
            await c.until(lambda: running(c.machine(name)) and ready(c.node(name)))
            machine = c.machine(name)
            assert machine is not None
            c.world.cloud.fail(machine.spec.provider_id)
            await c.until(lambda: (m := c.machine(name)) is not None and m.phase == PHASE_UNKNOWN)

            forwarder.cut()
            with trio.fail_after(120):  # unreachable for 30 s, seen by a check (every 60 s)
                await c.ctx.freeze.wait(True)
            await trio.sleep(2 * health_timeout)  # the health timeout runs out meanwhile
            stored = await c.client.get(Machine, name, namespace=c.ns)  # straight to the server
            assert stored.phase == PHASE_UNKNOWN

            forwarder.restore()
            with trio.fail_after(120):
                await c.ctx.freeze.wait(False)
            await c.until(
                lambda: (
                    (m := c.machine(name)) is not None
                    and m.status.last_operation.description == HEALTH_TIMEOUT_RESET
                )
            )
            reset_at = trio.current_time()
            reset = c.machine(name)
            assert reset is not None and reset.phase != PHASE_FAILED
            await c.until(lambda: (m := c.machine(name)) is None or m.phase == PHASE_FAILED)
            assert trio.current_time() - reset_at >= health_timeout
        nursery.cancel_scope.cancel()
