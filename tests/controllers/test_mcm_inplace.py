"""MCM's in-place updates (GEP-31) end to end, on the emulator and on a real kube-apiserver: a
MachineDeployment with the ``InPlaceUpdate`` strategy keeps its VMs when its template changes.
The deployment labels the old set's nodes candidates and selects some (Auto, within
maxUnavailable) or leaves that to the user (Manual); the machine controller drains a selected
node and hands it to the simulated node agent, which reports with the ``update-result`` label;
the updated machine then moves to the new MachineSet and its node is back in service.

MCM's own scenarios (``deployment_inplace_test.go``, ``machine_util`` in-place cases) run here
as one cluster: the selection bound, the transfer, the Manual hand-off and a failed update.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import (
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
    NODE_IN_PLACE_UPDATE,
    PHASE_IN_PLACE_UPDATE_FAILED,
    PHASE_RUNNING,
    UPDATE_FAILED,
    UPDATE_SUCCESSFUL,
    Machine,
)
from kubetrio.api.machineset import (
    LABEL_MACHINE_SET_SCALE_UP_DISABLED,
    MachineDeployment,
    MachineSet,
)
from kubetrio.api.meta import parse_time
from kubetrio.runtime.util.duration import Duration
from kubetrio.sim.cluster.options import IN_PLACE_UPDATE_FAILS_ANNOTATION
from kubetrio.testing.servers import ApiServer
from tests.helpers.machines import MACHINE_API
from tests.helpers.mcm_world import Mcm, mcm_on

UPDATE_LABELS = (
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
)
NEW_CLASS = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "large"}}}}


def in_place(orchestration: str, **bounds: Any) -> dict[str, Any]:
    return {
        "type": "InPlaceUpdate",
        "inPlaceUpdate": {"orchestrationType": orchestration, **bounds},
    }


def pool_machines(c: Mcm, pool: str) -> list[Machine]:
    return [
        m
        for m in c.machines()
        if m.metadata.labels.get("name") == pool and not m.metadata.deletion_timestamp
    ]


def owner(m: Machine) -> str:
    ref = m.metadata.controller_ref()
    return ref.name if ref is not None else ""


def node_of(c: Mcm, m: Machine) -> Node | None:
    return c.node(m.metadata.labels.get("node", ""))


def condition_reason(node: Node | None) -> str | None:
    condition = node.condition(NODE_IN_PLACE_UPDATE) if node is not None else None
    return condition.reason if condition is not None else None


def back_in_service(c: Mcm, m: Machine) -> bool:
    """Running, its node updated and free of every update label, schedulable and untainted."""
    node = node_of(c, m)
    return (
        m.phase == PHASE_RUNNING
        and node is not None
        and condition_reason(node) == UPDATE_SUCCESSFUL
        and not any(label in node.metadata.labels for label in UPDATE_LABELS)
        and not node.spec.unschedulable
        and not node.spec.taints
        and LABEL_NODE_UPDATE_RESULT not in m.metadata.labels
    )


async def pool_running(c: Mcm, pool: str, replicas: int) -> dict[str, str]:
    """The pool's machines by name with their VMs' provider IDs, once all run."""
    await c.until(
        lambda: (
            len(pool_machines(c, pool)) == replicas
            and all(m.phase == PHASE_RUNNING for m in pool_machines(c, pool))
        )
    )
    return {m.metadata.name: m.spec.provider_id for m in pool_machines(c, pool)}


def machine_set(c: Mcm, name: str) -> MachineSet | None:
    return next((s for s in c.machine_sets() if s.metadata.name == name), None)


def new_set_name(c: Mcm, pool: str, old: str) -> str:
    names = [s.metadata.name for s in c.machine_sets() if s.metadata.name != old]
    return names[0] if names else ""


async def test_auto_updates_every_machine_in_place_within_max_unavailable(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        strategy = in_place("Auto", maxUnavailable=1, maxSurge=0)
        pool = await c.pool(3, strategy)
        vms = await pool_running(c, pool, 3)
        (old_set,) = [s.metadata.name for s in c.machine_sets()]

        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": NEW_CLASS})
        most_selected = [0]

        def updated() -> bool:
            machines = pool_machines(c, pool)
            selected = sum(
                1
                for m in machines
                if (n := node_of(c, m)) is not None
                and LABEL_NODE_SELECTED_FOR_UPDATE in n.metadata.labels
            )
            most_selected[0] = max(most_selected[0], selected)
            new = new_set_name(c, pool, old_set)
            return (
                len(machines) == 3
                and bool(new)
                and all(owner(m) == new and back_in_service(c, m) for m in machines)
            )

        await c.until(updated)
        assert {m.metadata.name: m.spec.provider_id for m in pool_machines(c, pool)} == vms, (
            "the same machines on the same VMs: updated in place, none replaced"
        )
        assert len(c.world.cloud.vms) == 3
        assert most_selected[0] == 1, "maxUnavailable 1: one node at a time"
        for m in pool_machines(c, pool):
            # MCM moves the machine, not its spec: the VM was updated where it runs.
            assert m.spec.class_.name == "small"
        await c.until(lambda: (s := machine_set(c, old_set)) is None or s.spec.replicas == 0)
        old = machine_set(c, old_set)
        assert old is None or LABEL_MACHINE_SET_SCALE_UP_DISABLED in old.metadata.labels
        deployments = c.manager.cache.informer(MachineDeployment, namespace=c.ns).lister
        await c.until(
            lambda: (
                (d := deployments.get(c.ns, pool)) is not None
                and d.status.updated_replicas == d.status.available_replicas == 3
            )
        )


async def test_auto_with_max_surge_adds_a_new_machine_and_updates_the_rest_in_place(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's maxSurge case: the new set first grows by the surge with a new VM; an old machine
    is updated and moved; the new set is then full, so the old set's last machine goes."""
    async with mcm_on(api_server) as c:
        strategy = in_place("Auto", maxUnavailable=0, maxSurge=1)
        pool = await c.pool(2, strategy)
        vms = await pool_running(c, pool, 2)
        (old_set,) = [s.metadata.name for s in c.machine_sets()]

        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": NEW_CLASS})
        most = [0]

        def done() -> bool:
            machines = pool_machines(c, pool)
            most[0] = max(most[0], len(machines))
            new = new_set_name(c, pool, old_set)
            return (
                len(machines) == 2
                and bool(new)
                and all(owner(m) == new and m.phase == PHASE_RUNNING for m in machines)
            )

        await c.until(done)
        machines = {m.metadata.name: m for m in pool_machines(c, pool)}
        kept = set(machines) & set(vms)
        (fresh,) = set(machines) - set(vms)
        assert len(kept) == 1, "one old machine updated in place, the other removed"
        (updated,) = kept
        assert back_in_service(c, machines[updated])
        assert machines[updated].spec.provider_id == vms[updated]
        assert machines[fresh].spec.class_.name == "large", "the surge machine is new"
        assert most[0] <= 3, "maxSurge 1"


async def test_manual_updates_only_the_nodes_the_user_selects(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        pool = await c.pool(2, in_place("Manual"))
        vms = await pool_running(c, pool, 2)
        (old_set,) = [s.metadata.name for s in c.machine_sets()]

        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": NEW_CLASS})

        def candidates() -> bool:
            nodes = [node_of(c, m) for m in pool_machines(c, pool)]
            return bool(new_set_name(c, pool, old_set)) and all(
                n is not None and condition_reason(n) == "CandidateForUpdate" for n in nodes
            )

        await c.until(candidates)
        new_set = machine_set(c, new_set_name(c, pool, old_set))
        assert new_set is not None and new_set.spec.replicas == 0, "Manual: no surge"
        assert all(owner(m) == old_set for m in pool_machines(c, pool))
        assert all(m.phase == PHASE_RUNNING for m in pool_machines(c, pool))

        first, second = sorted(m.metadata.name for m in pool_machines(c, pool))
        await select(c, first)
        await c.until(
            lambda: (
                (m := c.machine(first)) is not None
                and owner(m) == new_set.metadata.name
                and back_in_service(c, m)
            )
        )
        other = c.machine(second)
        assert other is not None and owner(other) == old_set
        other_node = node_of(c, other)
        assert other_node is not None
        assert LABEL_NODE_CANDIDATE_FOR_UPDATE in other_node.metadata.labels
        assert not other_node.spec.unschedulable

        await select(c, second)
        await c.until(
            lambda: all(
                owner(m) == new_set.metadata.name and back_in_service(c, m)
                for m in pool_machines(c, pool)
            )
        )
        assert {m.metadata.name: m.spec.provider_id for m in pool_machines(c, pool)} == vms


async def test_a_failed_update_leaves_the_machine_in_place_update_failed_then_replaced(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    """MCM: the agent's failure is the machine's InPlaceUpdateFailed (its node stays cordoned);
    past the health timeout it is Failed and goes, and the new set makes a new machine."""
    async with mcm_on(api_server, health_timeout=Duration(60)) as c:
        pool = await c.pool(1, in_place("Manual"))
        await pool_running(c, pool, 1)
        (machine,) = pool_machines(c, pool)
        old_set = owner(machine)
        node = node_of(c, machine)
        assert node is not None
        patch = {"metadata": {"annotations": {IN_PLACE_UPDATE_FAILS_ANNOTATION: "disk full"}}}
        await c.client.patch(Node, node.name, patch)

        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": NEW_CLASS})
        await c.until(lambda: condition_reason(node_of(c, machine)) == "CandidateForUpdate")
        await select(c, machine.metadata.name)

        def failed() -> bool:
            m = c.machine(machine.metadata.name)
            return (
                m is not None
                and m.phase == PHASE_IN_PLACE_UPDATE_FAILED
                and condition_reason(node_of(c, m)) == UPDATE_FAILED
            )

        await c.until(failed)
        m = c.machine(machine.metadata.name)
        assert m is not None
        assert m.status.last_operation.description == (
            f"Machine {m.metadata.name} failed to update dependencies: disk full"
        )
        assert m.status.last_operation.state == "Failed"
        assert m.status.last_operation.type == "InPlaceUpdate"
        failed_node = node_of(c, m)
        assert failed_node is not None
        condition = failed_node.condition(NODE_IN_PLACE_UPDATE)
        assert condition is not None
        assert condition.message == "Node in-place update failed: disk full"
        assert failed_node.spec.unschedulable, "a failed node stays cordoned"
        assert owner(m) == old_set, "it stays in its old set"
        since = c.manager.registry.get_sample_value(
            "kubetrio_machine_in_place_update_phase_since_seconds",
            {"namespace": c.ns, "name": m.metadata.name, "phase": PHASE_IN_PLACE_UPDATE_FAILED},
        )
        stamp = parse_time(m.status.current_status.last_update_time)
        assert stamp is not None and since == stamp.timestamp()

        def replaced() -> bool:
            machines = pool_machines(c, pool)
            return (
                c.machine(machine.metadata.name) is None
                and len(machines) == 1
                and machines[0].phase == PHASE_RUNNING
                and owner(machines[0]) == new_set_name(c, pool, old_set)
            )

        await c.until(replaced)


async def select(c: Mcm, machine: str) -> None:
    """What a user does in a Manual update: label the machine's node selected-for-update."""
    m = c.machine(machine)
    assert m is not None
    patch = {"metadata": {"labels": {LABEL_NODE_SELECTED_FOR_UPDATE: "true"}}}
    await c.client.patch(Node, m.metadata.labels["node"], patch)
