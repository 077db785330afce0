"""MCM's rules for rollouts, replicas and deletions, end to end on the emulator and on a real
kube-apiserver (the harness of ``test_mcm_both_servers``), each after the scenario of MCM's own
unit tests:

- a rollout's PreferNoSchedule taint leaves the nodes of a set that becomes current again once
  that rollout completes (``rolloutRolling``, ``removeTaintNodesBackingMachineSet``);
- a deletion arriving during a machine's create call waits for the call
  (``shouldMachineBeMovedToTerminatingQueue``, ``triggerDeletionFlow``);
- a MachineSet counts only machines that are not Terminating (``manageReplicas``);
- a machine the cluster autoscaler marked for deletion goes even when the set has no surplus
  (``getMachinesMarkedForDeletion``: a scale-down and scale-up in quick succession must not
  leave the machine it cordoned);
- the deletion flow removes the Node's finalizer and deletes the Node in one step
  (``deleteNodeObject``), and Nodes MCM does not manage get no finalizer
  (``reconcileClusterNodeKey``).
"""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import Event, Node
from kubetrio.api.machine import PHASE_RUNNING, PHASE_TERMINATING, Machine
from kubetrio.api.machineset import (
    LAST_SCALER_CHANGE_ANNOTATION,
    MACHINE_PRIORITY_ANNOTATION,
    TRIGGER_DELETION_BY_MCM_ANNOTATION,
    MachineSet,
)
from kubetrio.api.meta import format_time
from kubetrio.controllers.machine.status import (
    INITIATE_FINALIZER_REMOVAL,
    INITIATE_NODE_DELETION,
    NODE_FINALIZER,
    NOT_MANAGED_ANNOTATION,
)
from kubetrio.controllers.machinedeployment.revisions import PREFER_NO_SCHEDULE_KEY
from kubetrio.runtime.util.clock import now
from kubetrio.testing.servers import ApiServer
from tests.helpers.deployments import deployment_doc
from tests.helpers.machines import MACHINE_API, machine_doc
from tests.helpers.machinesets import machine_set_doc
from tests.helpers.mcm_world import Mcm, mcm_on, ready, running, running_machines

SLOW_CREATE = 20.0  # seconds the "slow" class's create call takes


def prefer_no_schedule(node: Node | None) -> bool:
    return node is not None and any(
        (t.key, t.value, t.effect) == (PREFER_NO_SCHEDULE_KEY, "True", "PreferNoSchedule")
        for t in node.spec.taints
    )


def set_of_class(c: Mcm, machine_class: str) -> MachineSet | None:
    sets = [s for s in c.machine_sets() if s.spec.template.spec.class_.name == machine_class]
    return sets[0] if sets else None


async def event_reasons(c: Mcm, name: str) -> list[str]:
    events = (await c.client.list(Event, namespace=c.ns)).items
    ours = [
        e for e in events if (e.involved_object.kind, e.involved_object.name) == ("Machine", name)
    ]
    return [e.reason for e in sorted(ours, key=lambda e: int(e.metadata.resource_version))]


async def test_a_reverted_rollout_untaints_the_nodes_of_the_set_current_again(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        await c.seed_class("broken", neverReady=True)  # a rollout to it never completes
        pool = c.name("pool")
        await c.post(deployment_doc(pool, replicas=1))
        await c.until(lambda: len(running_machines(c, name=pool)) == 1)
        [machine] = running_machines(c, name=pool)
        node = machine.metadata.labels["node"]
        small = set_of_class(c, "small")
        assert small is not None

        to = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "broken"}}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": to})

        # The rollout taints the old set's nodes (pods prefer the new machines meanwhile), and
        # marks the set so it is tainted once.
        def small_set() -> MachineSet | None:
            lister = c.manager.cache.informer(MachineSet, namespace=c.ns).lister
            return lister.get(c.ns, small.metadata.name)

        def tainted() -> bool:
            current = small_set()
            return (
                prefer_no_schedule(c.node(node))
                and current is not None
                and current.metadata.annotations.get(PREFER_NO_SCHEDULE_KEY) == "True"
            )

        await c.until(tainted)

        # Reverted before it completes: the tainted set is the deployment's current one again.
        back = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "small"}}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": back})

        def untainted() -> bool:
            current = small_set()
            broken = set_of_class(c, "broken")
            return (
                not prefer_no_schedule(c.node(node))
                and current is not None
                and PREFER_NO_SCHEDULE_KEY not in current.metadata.annotations
                and (broken is None or broken.status.replicas == 0)
            )

        await c.until(untainted)
        assert [m.metadata.name for m in running_machines(c, name=pool)] == [machine.metadata.name]


async def test_a_deletion_during_the_create_call_waits_for_it_and_leaves_nothing_behind(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("slow", createSeconds=SLOW_CREATE)
        name = c.name("m-slow")
        await c.post(machine_doc(name, machine_class="slow"))
        # The VM exists from the start of the create call, which answers SLOW_CREATE later.
        await c.until(lambda: c.world.cloud.find(name, c.ns) is not None)
        vm = c.world.cloud.find(name, c.ns)
        assert vm is not None
        returns_at = vm.created_at + SLOW_CREATE
        await c.client.delete(Machine, name, namespace=c.ns)
        terminating_at: list[float] = []

        def gone() -> bool:
            m = c.machine(name)
            if m is not None and m.phase == PHASE_TERMINATING and not terminating_at:
                terminating_at.append(trio.current_time())
            return m is None

        await c.until(gone)
        assert terminating_at and terminating_at[0] >= returns_at, (
            "the deletion flow began while the create call was in flight"
        )
        assert c.world.cloud.find(name, c.ns) is None, "the VM the call brought back is deleted"
        assert vm.provider_id not in c.world.cloud.vms
        assert await c.target_client.get_or_none(Node, vm.node_name) is None


async def test_a_terminating_machine_does_not_count_against_a_scale_up(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        # VM deletions of this class fail until the class says otherwise: a machine scaled
        # down stays Terminating meanwhile.
        held = {"delete": {"code": "Unavailable", "count": 1000}}
        await c.seed_class("small", failNext=held)
        name = c.name("set")
        await c.post(machine_set_doc(name, 2))
        await c.until(lambda: len(running_machines(c, set=name)) == 2)
        before = {m.metadata.name for m in c.machines()}

        await c.merge_patch("MachineSet", MACHINE_API, name, {"spec": {"replicas": 1}})
        await c.until(lambda: any(m.phase == PHASE_TERMINATING for m in c.machines()))
        [leaving] = [m.metadata.name for m in c.machines() if m.phase == PHASE_TERMINATING]

        await c.merge_patch("MachineSet", MACHINE_API, name, {"spec": {"replicas": 2}})

        def replaced_meanwhile() -> bool:
            m = c.machine(leaving)
            return (
                m is not None
                and m.phase == PHASE_TERMINATING
                and len([r for r in running_machines(c, set=name) if r.metadata.name != leaving])
                == 2
            )

        await c.until(replaced_meanwhile)
        new = {m.metadata.name for m in c.machines()} - before
        assert len(new) == 1, "exactly one machine made for the one that is leaving"

        await c.merge_patch(
            "MachineClass", MACHINE_API, "small", {"providerSpec": {"failNext": None}}
        )
        await c.until(lambda: c.machine(leaving) is None)
        assert len(running_machines(c, set=name)) == 2
        assert len(c.machines()) == 2


async def test_a_deleted_node_is_released_and_deleted_in_one_step_and_unmanaged_nodes_skipped(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        unmanaged, unclaimed = c.name("hand-joined"), c.name("no-machine")
        for node, annotations in ((unmanaged, {NOT_MANAGED_ANNOTATION: "true"}), (unclaimed, {})):
            await c.target_client.create(
                Node, {"metadata": {"name": node, "annotations": annotations}}
            )
        try:
            await deleted_node_scenario(c, unmanaged, unclaimed)
        finally:
            for node in (unmanaged, unclaimed):
                await c.target_client.delete(Node, node, missing_ok=True)


async def deleted_node_scenario(c: Mcm, *unmanaged: str) -> None:
    name = c.name("m-1")
    await c.post(machine_doc(name))
    await c.until(
        lambda: (
            running(c.machine(name))
            and ready(node := c.node(name))
            and node is not None
            and NODE_FINALIZER in node.metadata.finalizers
        )
    )
    for node in unmanaged:
        seen = c.node(node)
        assert seen is not None and NODE_FINALIZER not in seen.metadata.finalizers, node
    machine = c.machine(name)
    assert machine is not None and machine.phase == PHASE_RUNNING

    await c.target_client.delete(Node, name)
    held: list[bool] = []
    steps: list[str] = []

    def gone() -> bool:
        node = c.node(name)
        if node is not None and node.deleting:
            held.append(True)
        m = c.machine(name)
        said = m.status.last_operation.description if m is not None else ""
        if said and (not steps or steps[-1] != said):
            steps.append(said)
        return c.machine(name) is None and node is None

    await c.until(gone)
    assert held, "the finalizer held the Node while its machine was deleted"
    # One node step: the finalizer's removal and the Node's deletion are never recorded apart
    # (retried together should either fail); the Node, deleting already, may go as soon as
    # its finalizer does.
    after_vm = steps[next(i for i, s in enumerate(steps) if s.startswith("VM deletion")) + 1 :]
    *retried, done = after_vm
    assert all(s.endswith(f"Retrying. {INITIATE_NODE_DELETION}") for s in retried), steps
    assert done in (
        f'Deletion of Node Object "{name}" is successful. {INITIATE_FINALIZER_REMOVAL}',
        f'No node object found for "{name}", continuing deletion flow. '
        f"{INITIATE_FINALIZER_REMOVAL}",
    ), steps
    reasons = await event_reasons(c, name)
    # The VM first, then the Node released and deleted together, then the machine's finalizer.
    order = [r for r in reasons if r in ("Terminating", "Drained", "VMDeleted", "NodeDeleted")]
    assert order == ["Terminating", "Drained", "VMDeleted", "NodeDeleted"], reasons
    assert reasons[-1] == "NodeDeleted", reasons
    assert machine.spec.provider_id not in c.world.cloud.vms


async def test_a_machine_the_autoscaler_marked_goes_though_the_replicas_are_back_up(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        pool = c.name("pool")
        await c.post(deployment_doc(pool, replicas=2))
        await c.until(lambda: len(running_machines(c, name=pool)) == 2)
        marked, kept = sorted(m.metadata.name for m in running_machines(c, name=pool))
        # The autoscaler named ``marked`` when it scaled the pool down, then scaled it up again
        # before MCM acted: the replicas are as they were, the machine still has to go.
        stamp = format_time(now())
        annotations = {
            TRIGGER_DELETION_BY_MCM_ANNOTATION: f"{marked}~{stamp}",
            LAST_SCALER_CHANGE_ANNOTATION: stamp,
        }
        await c.merge_patch(
            "MachineDeployment", MACHINE_API, pool, {"metadata": {"annotations": annotations}}
        )
        priorities: list[str] = []

        def replaced() -> bool:
            m = c.machine(marked)
            if m is not None and m.metadata.annotations.get(MACHINE_PRIORITY_ANNOTATION) == "1":
                priorities[:] = ["1"]
            names = {r.metadata.name for r in running_machines(c, name=pool)}
            return m is None and kept in names and len(names) == 2

        await c.until(replaced)
        assert priorities == ["1"], "the deployment marked the machine first"
        assert len(c.machines()) == 2
