"""The simulated cloud and storage service do per-change work in proportion to the change, not
to the cluster: one more VM, or one more Node, costs the same at 10 as at 200 (a full pass per
change made a 10 000-machine start quadratic, and the emulator the benchmark's bottleneck)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cloud.script import VmScript
from kubetrio.sim.storage import NODE_ID_ANNOTATION, serve_storage_sim

SMALL, LARGE = 10, 200


async def until(emu: Emulator, holds: Callable[[], bool]) -> None:
    """Until ``holds()``, re-checked after every change the store commits."""
    changed = trio.Event()

    def hook(*_: Any) -> None:
        changed.set()

    unsubscribe = emu.store.subscribe(hook)
    try:
        with trio.fail_after(60):
            while not holds():
                await changed.wait()
                changed = trio.Event()
    finally:
        unsubscribe()


def node_count(emu: Emulator) -> int:
    return sum(1 for _ in emu.store.iter(emu.resource("nodes"), None))


async def cost_of_one_more_vm(emu: Emulator, existing: int, tag: str) -> int:
    """VMs the kubelets' loop visits to boot and register one VM beside ``existing`` booted
    ones."""
    base = node_count(emu)
    for i in range(existing):
        emu.extension(SimulatedCloud).create(f"{tag}-{i}", "default", "default/small", VmScript())
    await until(emu, lambda: node_count(emu) == base + existing)
    await trio.testing.wait_all_tasks_blocked()
    before = emu.extension(SimulatedCloud).examined
    emu.extension(SimulatedCloud).create(f"{tag}-last", "default", "default/small", VmScript())
    await until(emu, lambda: node_count(emu) == base + existing + 1)
    return emu.extension(SimulatedCloud).examined - before


async def test_one_more_vm_costs_the_same_beside_10_or_200(emu: Emulator) -> None:
    small = await cost_of_one_more_vm(emu, SMALL, "s")
    large = await cost_of_one_more_vm(emu, LARGE, "l")
    assert small == large == 1, (small, large)
    # The indexes answer as the scans did.
    vm = emu.extension(SimulatedCloud).find("l-7", "default")
    assert vm is not None and emu.extension(SimulatedCloud).lookup("", "", vm.provider_id) is vm
    node = emu.get("v1", "Node", "l-last")
    assert node is not None and node["spec"]["providerID"].startswith("sim://")


def ready_node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def add_ready(emu: Emulator, name: str) -> None:
    emu.create(ready_node(name))
    emu.set_status("v1", "Node", name, {"conditions": [{"type": "Ready", "status": "True"}]})


def annotated(emu: Emulator, name: str) -> bool:
    node = emu.get("v1", "Node", name)
    return node is not None and NODE_ID_ANNOTATION in (node["metadata"].get("annotations") or {})


async def test_one_more_node_costs_the_same_beside_10_or_200(emu: Emulator) -> None:
    async with serve_storage_sim(emu) as storage:
        costs = []
        for size, tag in ((SMALL, "s"), (LARGE, "l")):
            for i in range(size):
                add_ready(emu, f"{tag}-{i}")
            await until(emu, lambda tag=tag, size=size: annotated(emu, f"{tag}-{size - 1}"))
            await trio.testing.wait_all_tasks_blocked()  # the annotations' own echoes too
            before = storage.examined
            add_ready(emu, f"{tag}-last")
            await until(emu, lambda tag=tag: annotated(emu, f"{tag}-last"))
            await trio.testing.wait_all_tasks_blocked()
            # Registering it: its creation, its Ready status and the annotation's own write.
            costs.append(storage.examined - before)
        assert costs[0] == costs[1] <= 3, costs
        assert len(storage.nodes) == SMALL + LARGE + 2
        # by_id answers from the index as the scan did.
        some = storage.nodes["l-5"]
        assert storage.by_id(some.id) is some

        # A Node lost is still noticed (only it is read), and its storage node goes offline.
        before = storage.examined
        emu.delete("v1", "Node", "l-5")
        await storage.wait_for(lambda: storage.nodes["l-5"].offline_at is not None)
        assert storage.examined - before == 1
