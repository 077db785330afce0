"""MCM's machine preservation (v0.62) end to end, on the emulator and on a real kube-apiserver:
a Failed machine whose node (or itself) is annotated ``node.machine.sapcloud.io/preserve`` is
kept, its node tainted and drained, instead of being replaced — until it recovers
(``when-failed`` then ends) or its ``preserveExpiryTime`` passes (then it is replaced as any
Failed machine).
"""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import (
    NODE_PRESERVED,
    NODE_PRESERVED_TAINT,
    PHASE_FAILED,
    PHASE_RUNNING,
    PRESERVE_ANNOTATION,
    Machine,
)
from kubetrio.api.meta import format_time, parse_time
from kubetrio.runtime.util.clock import now
from kubetrio.runtime.util.duration import Duration
from kubetrio.testing.servers import ApiServer
from tests.helpers.machines import MACHINE_API
from tests.helpers.machinesets import machine_set_doc
from tests.helpers.mcm_world import Mcm, mcm_on, running_machines


def set_machines(c: Mcm, name: str) -> list[Machine]:
    return [
        m
        for m in c.machines()
        if m.metadata.labels.get("set") == name and not m.metadata.deletion_timestamp
    ]


def running(c: Mcm, name: str) -> list[Machine]:
    return [m for m in set_machines(c, name) if m.phase == PHASE_RUNNING]


def preserved_condition(node: Node | None) -> tuple[str, str, str] | None:
    condition = node.condition(NODE_PRESERVED) if node is not None else None
    if condition is None:
        return None
    return condition.status, condition.reason, condition.message


def tainted(node: Node | None) -> bool:
    return node is not None and any(t.key == NODE_PRESERVED_TAINT for t in node.spec.taints)


async def test_a_failed_machine_preserved_when_failed_is_kept_and_recovers(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server, health_timeout=Duration(60)) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 2))
        await c.until(lambda: len(running(c, name)) == 2)
        broken = running(c, name)[0]
        node_name = broken.metadata.labels["node"]
        patch = {"metadata": {"annotations": {PRESERVE_ANNOTATION: "when-failed"}}}
        await c.client.patch(Node, node_name, patch)
        c.world.cloud.fail(broken.spec.provider_id)

        def kept() -> bool:
            m = c.machine(broken.metadata.name)
            condition = preserved_condition(c.node(node_name))
            return (
                m is not None
                and m.phase == PHASE_FAILED
                and m.status.current_status.preserve_expiry_time is not None
                and condition is not None
                and condition[0] == "True"
                and tainted(c.node(node_name))
            )

        await c.until(kept)
        _, reason, message = preserved_condition(c.node(node_name)) or ("", "", "")
        assert reason == "Preserved by user."
        assert message.startswith("Preserved node drained successfully. Machine preserved until")
        node = c.node(node_name)
        assert node is not None and not node.spec.unschedulable, "tainted, not cordoned"
        assert node.metadata.annotations.get(
            "cluster-autoscaler.kubernetes.io/scale-down-disabled"
        ) == ("true")
        assert len(set_machines(c, name)) == 2, "the Failed machine is not replaced"
        failed = c.machine(broken.metadata.name)
        assert failed is not None
        until = parse_time(failed.status.current_status.preserve_expiry_time)
        assert until is not None
        assert (
            c.manager.registry.get_sample_value(
                "kubetrio_machine_preserve_expiry_time_seconds",
                {"namespace": c.ns, "name": broken.metadata.name, "phase": PHASE_FAILED},
            )
            == until.timestamp()
        )
        assert broken.spec.provider_id in c.world.cloud.vms

        # The VM comes back: its kubelet reports Ready again.
        stamp = format_time(now())
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }
        await c.client.patch(
            Node,
            node_name,
            {"status": {"conditions": [ready]}},
            patch_type="strategic",
            subresource="status",
        )

        def recovered() -> bool:
            m = c.machine(broken.metadata.name)
            condition = preserved_condition(c.node(node_name))
            return (
                m is not None
                and m.phase == PHASE_RUNNING
                and m.status.current_status.preserve_expiry_time is None
                and condition is not None
                and condition[:2] == ("False", "Preservation stopped.")
                and not tainted(c.node(node_name))
            )

        await c.until(recovered)
        node = c.node(node_name)
        assert node is not None
        assert "cluster-autoscaler.kubernetes.io/scale-down-disabled" not in (
            node.metadata.annotations
        )
        assert node.metadata.annotations.get(PRESERVE_ANNOTATION) == "when-failed", (
            "kept: the machine is preserved again should it fail again"
        )
        assert len(set_machines(c, name)) == 2


async def test_a_preserved_failed_machine_is_replaced_once_its_preservation_expires(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(
        api_server, health_timeout=Duration(60), machine_preserve_timeout=Duration(600)
    ) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 1))
        await c.until(lambda: len(running(c, name)) == 1)
        (broken,) = running(c, name)
        await c.merge_patch(
            "Machine",
            MACHINE_API,
            broken.metadata.name,
            {"metadata": {"annotations": {PRESERVE_ANNOTATION: "now"}}},
        )
        await c.until(
            lambda: (
                (m := c.machine(broken.metadata.name)) is not None
                and m.status.current_status.preserve_expiry_time is not None
            )
        )
        c.world.cloud.fail(broken.spec.provider_id)
        await c.until(
            lambda: (
                (m := c.machine(broken.metadata.name)) is not None
                and m.phase == PHASE_FAILED
                and tainted(c.node(broken.metadata.labels["node"]))
            )
        )
        m = c.machine(broken.metadata.name)
        assert m is not None
        assert len(set_machines(c, name)) == 1, "preserved: not replaced"

        def replaced() -> bool:
            machines = set_machines(c, name)
            return (
                c.machine(broken.metadata.name) is None
                and len(machines) == 1
                and machines[0].phase == PHASE_RUNNING
            )

        await c.until(replaced)
        assert broken.spec.provider_id not in c.world.cloud.vms


async def test_auto_preservation_keeps_up_to_the_limit_and_releases_when_lowered(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server, health_timeout=Duration(60)) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 2, autoPreserveFailedMachineMax=1))
        await c.until(lambda: len(running(c, name)) == 2)
        first, second = running(c, name)
        for m in (first, second):
            c.world.cloud.fail(m.spec.provider_id)

        def one_kept() -> bool:
            names = {m.metadata.name for m in set_machines(c, name)}
            kept = [
                m
                for m in set_machines(c, name)
                if m.metadata.name in (first.metadata.name, second.metadata.name)
            ]
            return (
                len(kept) == 1
                and kept[0].phase == PHASE_FAILED
                and kept[0].metadata.annotations.get(PRESERVE_ANNOTATION) == "auto-preserved"
                and kept[0].status.current_status.preserve_expiry_time is not None
                and len(names) == 2
                and len(running(c, name)) == 1
            )

        await c.until(one_kept)
        (kept,) = [
            m
            for m in set_machines(c, name)
            if m.metadata.name in (first.metadata.name, second.metadata.name)
        ]
        condition = preserved_condition(c.node(kept.metadata.labels["node"]))
        assert condition is not None and condition[:2] == ("True", "Preserved by MCM.")

        await c.merge_patch(
            "MachineSet", MACHINE_API, name, {"spec": {"autoPreserveFailedMachineMax": 0}}
        )
        await c.until(lambda: c.machine(kept.metadata.name) is None and len(running(c, name)) == 2)


async def test_a_lowered_limit_releases_the_oldest_auto_preserved_machine_first(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's ``stopAutoPreservationForMachines``: the oldest machine's preservation goes first,
    even when a newer one expires sooner (its guide says the earliest to expire)."""
    async with mcm_on(api_server, health_timeout=Duration(60)) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 2, autoPreserveFailedMachineMax=2))
        await c.until(lambda: len(running(c, name)) == 2)
        # The first to go: the oldest (by name among machines of the same second, as the
        # timestamps have seconds only). It fails last, so the other one expires first.
        older, newer = sorted(
            running(c, name), key=lambda m: (m.metadata.creation_timestamp or "", m.name)
        )

        def preserved(machine: Machine) -> bool:
            m = c.machine(machine.metadata.name)
            return (
                m is not None
                and m.phase == PHASE_FAILED
                and m.metadata.annotations.get(PRESERVE_ANNOTATION) == "auto-preserved"
                and m.status.current_status.preserve_expiry_time is not None
            )

        c.world.cloud.fail(newer.spec.provider_id)
        await c.until(lambda: preserved(newer))
        c.world.cloud.fail(older.spec.provider_id)
        await c.until(lambda: preserved(older) and preserved(newer))
        first, second = c.machine(newer.metadata.name), c.machine(older.metadata.name)
        assert first is not None and second is not None
        ends_first = parse_time(first.status.current_status.preserve_expiry_time)
        ends_last = parse_time(second.status.current_status.preserve_expiry_time)
        assert ends_first is not None and ends_last is not None and ends_first < ends_last

        await c.merge_patch(
            "MachineSet", MACHINE_API, name, {"spec": {"autoPreserveFailedMachineMax": 1}}
        )
        await c.until(lambda: c.machine(older.metadata.name) is None)
        assert preserved(newer), "the newer machine stays preserved"
        await c.until(lambda: len(running(c, name)) == 1)


async def test_preserved_machines_are_scaled_down_last(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        await c.seed_class("small")
        name = c.name("set")
        await c.post(machine_set_doc(name, 3))
        await c.until(lambda: len(running(c, name)) == 3)
        # Of equals, a set removes its oldest machine first (by name within a second, as the
        # timestamps have seconds only): preserved, the oldest stays.
        oldest = min(running(c, name), key=lambda m: (m.metadata.creation_timestamp or "", m.name))
        patch = {"metadata": {"annotations": {PRESERVE_ANNOTATION: "now"}}}
        await c.client.patch(Node, oldest.metadata.labels["node"], patch)
        await c.until(
            lambda: (
                (m := c.machine(oldest.metadata.name)) is not None
                and m.status.current_status.preserve_expiry_time is not None
            )
        )

        await c.merge_patch("MachineSet", MACHINE_API, name, {"spec": {"replicas": 1}})
        await c.until(lambda: len(set_machines(c, name)) == 1)
        assert [m.metadata.name for m in set_machines(c, name)] == [oldest.metadata.name]


async def test_a_rolling_update_replaces_preserved_machines_too(
    api_server: ApiServer, mock_clock: trio.testing.MockClock
) -> None:
    async with mcm_on(api_server) as c:
        pool = await c.pool(2)
        await c.until(lambda: len(running_machines(c, name=pool)) == 2)
        kept = running_machines(c, name=pool)[0]
        patch = {"metadata": {"annotations": {PRESERVE_ANNOTATION: "now"}}}
        await c.client.patch(Node, kept.metadata.labels["node"], patch)
        await c.until(
            lambda: (
                (m := c.machine(kept.metadata.name)) is not None
                and m.status.current_status.preserve_expiry_time is not None
            )
        )

        to = {"template": {"spec": {"class": {"kind": "MachineClass", "name": "large"}}}}
        await c.merge_patch("MachineDeployment", MACHINE_API, pool, {"spec": to})

        def rolled() -> bool:
            machines = running_machines(c, name=pool)
            return (
                len(c.machines()) == 2
                and len(machines) == 2
                and all(m.spec.class_.name == "large" for m in machines)
            )

        await c.until(rolled)
        assert c.machine(kept.metadata.name) is None
        assert kept.spec.provider_id not in c.world.cloud.vms
