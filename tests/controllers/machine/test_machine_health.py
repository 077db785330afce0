"""Machine health end to end: node conditions copied onto the machine, Running ⇄ Unknown,
the health timeout to Failed (on time), meltdown protection per MachineDeployment, recovery,
and the node template kept in sync on the machine's node."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_FAILED, PHASE_RUNNING, PHASE_UNKNOWN
from kubetrio.controllers.machine.nodetemplate import LAST_APPLIED_ANNOTATION
from kubetrio.emulator import Emulator
from tests.helpers.machines import (
    MACHINE_API,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)

NOT_READY_AT_100 = [{"type": "Ready", "status": "False", "afterSeconds": 100}]
# The meltdown tests' health timeout: shorter than MCM's 10 min, as they prove an order (one
# Failed at a time, the rest held back long after their timeouts ran out), not the default.
MELTDOWN_HEALTH_TIMEOUT = 200.0


@pytest.mark.slow
async def test_unhealthy_node_makes_the_machine_unknown_then_failed_on_time(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        running = await h.wait_phase("m-1", PHASE_RUNNING)
        assert [c.type for c in running.status.conditions if c.status == "True"] == ["Ready"]
        unknown = await h.wait_phase("m-1", PHASE_UNKNOWN)
        became_unknown = trio.current_time()
        assert 99 <= became_unknown <= 102
        assert unknown.status.last_operation.description == (
            "Machine m-1 is unhealthy - changing MachineState to Unknown. "
            "Node conditions: Ready=False"
        )
        assert unknown.condition("Ready").status == "False"  # type: ignore[union-attr]
        failed = await h.wait_phase("m-1", PHASE_FAILED)
        assert 600 <= trio.current_time() - became_unknown <= 602
        assert failed.status.last_operation.description.startswith(
            "Machine m-1 is not healthy since 10 minutes. Changing status to failed."
        )


async def test_machine_recovers_when_its_node_does(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    flapping = [*NOT_READY_AT_100, {"type": "Ready", "status": "True", "afterSeconds": 200}]
    seed_class(emu, conditionAfter=flapping)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_UNKNOWN)
        recovered = await h.wait_phase("m-1", PHASE_RUNNING)
        assert 199 <= trio.current_time() <= 202
        assert recovered.status.last_operation.description == (
            "Machine m-1 successfully re-joined the cluster"
        )
        assert recovered.status.last_operation.type == "HealthCheck"


async def test_node_going_missing_makes_the_machine_unknown(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        await h.wait_phase("m-1", PHASE_RUNNING)
    # While no manager runs, the Node goes past the controller's finalizer (a live manager
    # would have deleted the machine instead: test_machine_node_deletion).
    node = emu.get("v1", "Node", "m-1")
    assert node is not None
    node["metadata"]["finalizers"] = []
    emu.update(node)
    emu.delete("v1", "Node", "m-1")
    async with machine_manager(emu) as h:
        unknown = await h.wait_phase("m-1", PHASE_UNKNOWN)
        assert unknown.status.last_operation.description.startswith(
            "Node object went missing. Machine m-1 is unhealthy"
        )


@pytest.mark.slow
async def test_only_one_machine_of_a_deployment_is_failed_at_a_time(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(emu, health_timeout=MELTDOWN_HEALTH_TIMEOUT) as h:
        for name in ("m-1", "m-2", "m-3"):
            emu.create(machine_doc(name))
        emu.create(machine_doc("other", deployment="pool-b"))
        for name in ("m-1", "m-2", "m-3", "other"):
            await h.wait_phase(name, PHASE_UNKNOWN)

        def failed(names: tuple[str, ...]) -> list[str]:
            return [n for n in names if (m := h.machine(n)) is not None and m.phase == PHASE_FAILED]

        pool = ("m-1", "m-2", "m-3")
        await h.wait_phase("other", PHASE_FAILED)  # another deployment: not held back
        await h.wait_machine("m-1", lambda _: len(failed(pool)) == 1)
        await trio.sleep(300)  # minutes later the other two are still held back
        assert len(failed(pool)) == 1
        first = failed(pool)[0]
        emu.delete(MACHINE_API, "Machine", first, "default")
        await h.wait_gone(first)
        await h.wait_machine("m-1", lambda _: len(failed(pool)) == 1)
        assert first not in failed(pool)


def template_taints(node: Node) -> list[tuple[str, str]]:
    """The taints other than the cluster's own (``node.kubernetes.io/*``: admission's not-ready
    on a new Node, the lifecycle controller's), which the template sync leaves alone."""
    return [
        (t.key, t.effect) for t in node.spec.taints if not t.key.startswith("node.kubernetes.io/")
    ]


async def test_node_template_is_synced_and_removed_keys_go_but_foreign_keys_stay(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu)
    template = {
        "metadata": {"labels": {"pool": "a", "tier": "gold"}, "annotations": {"owner": "team-x"}},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
    }
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1", nodeTemplate=template))
        await h.wait_phase("m-1", PHASE_RUNNING)

        def synced(node: Node | None, labels: dict[str, str]) -> bool:
            return node is not None and all(
                node.metadata.labels.get(k) == v for k, v in labels.items()
            )

        node = await h.wait_node("m-1", lambda n: synced(n, {"pool": "a", "tier": "gold"}))
        assert node is not None
        assert node.metadata.annotations["owner"] == "team-x"
        assert template_taints(node) == [("dedicated", "NoSchedule")]
        assert LAST_APPLIED_ANNOTATION in node.metadata.annotations
        # Someone else labels the node; then the template drops "tier" and the taint.
        node_doc = emu.get("v1", "Node", "m-1")
        assert node_doc is not None
        node_doc["metadata"]["labels"]["team"] = "ops"
        emu.update(node_doc)
        machine = emu.get(MACHINE_API, "Machine", "m-1", "default")
        assert machine is not None
        machine["spec"]["nodeTemplate"] = {"metadata": {"labels": {"pool": "b"}}}
        emu.update(machine)
        node = await h.wait_node(
            "m-1", lambda n: n is not None and n.metadata.labels.get("pool") == "b"
        )
        assert node is not None
        assert "tier" not in node.metadata.labels
        assert node.metadata.labels["team"] == "ops"  # not the template's: kept
        assert "owner" not in node.metadata.annotations
        assert template_taints(node) == []


@pytest.mark.slow
async def test_meltdown_protection_follows_the_owner_chain_to_the_real_deployment(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Machines of two MachineSets of one MachineDeployment, without MCM's ``name`` label (a
    template need not carry it): still one Failed at a time. Another deployment's sets are
    not held back by them."""
    install_crds(emu)
    seed_class(emu, conditionAfter=NOT_READY_AT_100)
    async with machine_manager(emu, health_timeout=MELTDOWN_HEALTH_TIMEOUT) as h:
        pool = emu.create(deployment_stub("pool"))
        other = emu.create(deployment_stub("other"))
        sets = {
            "pool-old": emu.create(set_stub("pool-old", pool)),
            "pool-new": emu.create(set_stub("pool-new", pool)),
            "other-1": emu.create(set_stub("other-1", other)),
        }
        placement = {"m-1": "pool-old", "m-2": "pool-old", "m-3": "pool-new", "o-1": "other-1"}
        for name, set_name in placement.items():
            doc = machine_doc(name)
            doc["metadata"]["labels"] = {}
            doc["metadata"]["ownerReferences"] = [owner_ref(sets[set_name])]
            emu.create(doc)
        for name in placement:
            await h.wait_phase(name, PHASE_UNKNOWN)

        def failed(names: tuple[str, ...]) -> list[str]:
            return [n for n in names if (m := h.machine(n)) is not None and m.phase == PHASE_FAILED]

        machines = ("m-1", "m-2", "m-3")
        await h.wait_phase("o-1", PHASE_FAILED)
        await h.wait_machine("m-1", lambda _: len(failed(machines)) == 1)
        await trio.sleep(300)
        assert len(failed(machines)) == 1, failed(machines)


def deployment_stub(name: str) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
        },
    }


def set_stub(name: str, deployment: dict[str, Any]) -> dict[str, Any]:
    app = deployment["metadata"]["name"]
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": app},
            "ownerReferences": [owner_ref(deployment)],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
        },
    }


def owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
