"""Nodes without a Machine get MCM's ``node.machine.sapcloud.io/not-managed-by-mcm``
annotation once older than the creation timeout, and lose it when a Machine claims them; a
machine's own node is never annotated, and other annotations are left alone."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_RUNNING
from kubetrio.controllers.safety.unmanaged_nodes import NOT_MANAGED_ANNOTATION
from kubetrio.emulator import Emulator
from tests.helpers.machines import install_crds, machine_doc, machine_manager, seed_class

pytestmark = pytest.mark.slow

PERIOD = 300.0
CREATION_TIMEOUT = 600.0


def stray_node(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"team": "db"}},
    }


def annotation(node: Node | None) -> str | None:
    return node.metadata.annotations.get(NOT_MANAGED_ANNOTATION) if node else None


async def test_nodes_without_a_machine_are_annotated_and_cleared_when_claimed(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    emu.create(stray_node("stray"))
    async with machine_manager(
        emu, safety_orphan_vms_period=PERIOD, creation_timeout=CREATION_TIMEOUT
    ) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_RUNNING)
        # Sweeps at 0, 300, 600, …: the node is too young for the first ones.
        annotated = await h.wait_node("stray", lambda n: annotation(n) is not None)
        assert annotation(annotated) == "1"
        assert CREATION_TIMEOUT <= trio.current_time() <= CREATION_TIMEOUT + PERIOD + 1
        assert annotated is not None and annotated.metadata.annotations["team"] == "db"
        assert annotation(h.node("m-1")) is None  # m-1's own node
        # A machine claims the node (its `node` label); left alone by the controller, as its
        # drainTimeout does not parse, so only the label speaks.
        claim = machine_doc("claimer", machineConfiguration={"drainTimeout": "never"})
        claim["metadata"]["labels"]["node"] = "stray"
        emu.create(claim)
        claimed_at = trio.current_time()
        cleared = await h.wait_node("stray", lambda n: annotation(n) is None)
        assert trio.current_time() - claimed_at <= PERIOD + 1
        assert cleared is not None and cleared.metadata.annotations["team"] == "db"
        await trio.sleep(2 * PERIOD)
        assert annotation(h.node("m-1")) is None
        assert annotation(h.node("stray")) is None
