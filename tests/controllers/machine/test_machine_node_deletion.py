"""A Node deleted out from under its machine (MCM v0.61): the machine controller's finalizer
holds the Node, the machine is deleted and its MachineSet replaces it; the deletion flow
removes the finalizer and deletes the Node in one step. Nodes annotated not-managed-by-mcm get
no finalizer, and the node annotation ``trigger-deletion-by-mcm`` does nothing."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.controllers.machine.status import NODE_FINALIZER, NOT_MANAGED_ANNOTATION
from kubetrio.emulator import Emulator
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.machines import (
    event_reasons,
    install_crds,
    machine_manager,
    running_machine,
    seed_class,
)
from tests.helpers.machinesets import machine_set_doc, machineset_manager


def has_finalizer(node: Node | None) -> bool:
    return node is not None and NODE_FINALIZER in node.metadata.finalizers


async def test_a_deleted_node_has_its_machine_replaced(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machineset_manager(emu) as s:
        emu.create(machine_set_doc("pool", 2))
        await s.wait_ready("pool", 2)
        first, second = sorted(m.name for m in s.machines_of("pool"))
        victim = s.h.machine(first)
        assert victim is not None
        node_name = victim.metadata.labels["node"]
        await s.h.wait_node(node_name, has_finalizer)
        vm = victim.spec.provider_id

        await s.h.client.delete(Node, node_name)
        # The finalizer holds the Node while its machine is drained and its VM deleted.
        await s.h.wait_node(node_name, lambda n: n is not None and n.deleting)
        await s.h.wait_gone(first)
        assert await s.h.client.get_or_none(Node, node_name) is None
        assert vm not in emu.extension(SimulatedCloud).vms
        reasons = await event_reasons(s.h, first)
        assert reasons[-5:] == ["NodeGone", "Terminating", "Drained", "VMDeleted", "NodeDeleted"]

        await s.wait_ready("pool", 2)
        names = {m.name for m in s.machines_of("pool")}
        assert second in names and first not in names
        for machine in s.machines_of("pool"):
            await s.h.wait_node(machine.metadata.labels["node"], has_finalizer)


async def test_unmanaged_nodes_and_the_old_node_annotation_are_left_alone(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "hand-joined", "annotations": {NOT_MANAGED_ANNOTATION: "1"}},
        }
    )
    async with machine_manager(emu) as h:
        await running_machine(emu, h, "m-1")
        await h.wait_node("m-1", has_finalizer)
        # The node annotation v0.50 honoured is only the cluster autoscaler's deployment one now.
        await h.client.patch(
            Node,
            "m-1",
            {
                "metadata": {
                    "annotations": {"node.machine.sapcloud.io/trigger-deletion-by-mcm": "true"}
                }
            },
        )
        await h.wait_node(
            "m-1",
            lambda n: (
                n is not None
                and "node.machine.sapcloud.io/trigger-deletion-by-mcm" in n.metadata.annotations
            ),
        )
        await trio.sleep(600)
        machine = h.machine("m-1")
        assert machine is not None and not machine.deleting
        hand_joined = h.node("hand-joined")
        assert hand_joined is not None and not hand_joined.metadata.finalizers

        # A node still holding the finalizer after its machine went by hand is let go.
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "leftover", "finalizers": [NODE_FINALIZER]},
            }
        )
        await h.wait_node("leftover", lambda n: n is not None)
        await h.client.delete(Node, "leftover")
        await h.wait_node("leftover", lambda n: n is None)
