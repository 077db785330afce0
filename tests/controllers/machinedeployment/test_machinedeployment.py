"""The MachineDeployment controller end to end on the emulator (MockClock), its MachineSets'
machines simulated by ``SetSimulator``: revisions, rolling updates within maxSurge and
maxUnavailable, Recreate, proportional scaling, pause, rollback, history cleanup and the
progress deadline."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.util.inflight import request_in_flight
from tests.helpers.deployments import DeploymentHarness, deployment_doc, deployment_manager
from tests.helpers.kube import Kubectl
from tests.helpers.machines import MACHINE_API, install_crds


async def test_a_deployment_gets_a_set_with_its_template_and_revision_1(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=3))
        done = await h.wait_complete()
        [machine_set] = h.sets_of()
        assert machine_set.spec.replicas == 3
        template_hash = machine_set.metadata.labels["machine-template-hash"]
        assert machine_set.spec.selector is not None
        assert machine_set.spec.selector.match_labels == {
            "name": "pool",
            "machine-template-hash": template_hash,
        }
        assert machine_set.spec.template.metadata.labels["machine-template-hash"] == template_hash
        assert machine_set.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
        assert machine_set.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "3"
        assert machine_set.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "4"
        assert done.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
        assert "machine.sapcloud.io/machine-controller-manager" in done.metadata.finalizers
        available = done.condition("Available")
        assert available is not None and available.reason == "MinimumReplicasAvailable"
        assert done.status.ready_replicas == 3


async def roll_to(h: DeploymentHarness, machine_class: str, name: str = "pool") -> int:
    """Start a rollout to another class; the generation to wait for."""
    return await h.patch({"spec": {"template": {"spec": {"class": {"name": machine_class}}}}}, name)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "max_total", "min_available"),
    [
        (1, 0, 4, 5, 4),
        (0, 1, 4, 4, 3),
        (2, 2, 5, 7, 3),
        ("50%", "0%", 5, 8, 5),
        ("0%", "25%", 5, 5, 4),
        (0, 0, 3, 3, 2),
        ("100%", "100%", 4, 8, 0),
    ],
)
async def test_rolling_update_stays_within_max_surge_and_max_unavailable(
    emu: Emulator,
    mock_clock: trio.testing.MockClock,
    surge: int | str,
    unavailable: int | str,
    replicas: int,
    max_total: int,
    min_available: int,
) -> None:
    install_crds(emu)
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }
    async with deployment_manager(emu) as h:
        assert h.sim is not None
        emu.create(deployment_doc(replicas=replicas, strategy=strategy))
        await h.wait_complete()
        h.sim.history.clear()
        started = trio.current_time()
        generation = await roll_to(h, "large")
        done = await h.wait_complete(generation=generation)
        took = trio.current_time() - started
        totals = [total for total, _ in h.sim.history]
        availability = [available for _, available in h.sim.history]
        assert max(totals) <= max_total, h.sim.history
        assert min(availability) >= min_available, h.sim.history
        # The bounds were used, not just respected: the rollout ran as wide as allowed.
        assert max(totals) == max_total or min(availability) == min_available
        assert done.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
        sets = {s.name: s for s in h.sets_of()}
        assert len(sets) == 2
        new = next(s for s in sets.values() if s.spec.template.spec.class_.name == "large")
        old = next(s for s in sets.values() if s.spec.template.spec.class_.name == "small")
        assert (new.spec.replicas, old.spec.replicas) == (replicas, 0)
        assert new.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
        # Each wave costs one boot (60 s); never more waves than the bounds force.
        step = max(max_total - replicas, 1) if max_total > replicas else replicas - min_available
        waves = -(-replicas // max(step, 1))
        assert took <= waves * 60 + 30, (took, waves)


async def test_recreate_removes_every_old_machine_before_creating_new_ones(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        assert h.sim is not None
        emu.create(deployment_doc(replicas=4, strategy={"type": "Recreate"}))
        await h.wait_complete()
        h.sim.history.clear()
        generation = await roll_to(h, "large")
        await h.wait_complete(generation=generation)
        # Down to nothing first, then all new at once: one boot.
        assert h.sim.history[0] == (0, 0)
        assert max(total for total, _ in h.sim.history) == 4
        assert h.sim.history[-1] == (4, 4)
        assert {s.spec.template.spec.class_.name: s.spec.replicas for s in h.sets_of()} == {
            "small": 0,
            "large": 4,
        }


async def test_scaling_during_a_rollout_is_proportional(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's ``scale``: 10 replicas (maxSurge 3, maxUnavailable 2) mid-rollout as 8 old + 5
    new. Scaled up, the new set takes the increase; scaled down, every active set gives up
    machines in proportion to its size (largest first with the rounding leftovers)."""
    install_crds(emu)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    async with deployment_manager(emu, boot=6000) as h:
        emu.create(deployment_doc(replicas=10, strategy=strategy))
        h.sim.boot = 60  # type: ignore[union-attr]
        await h.wait_complete()
        h.sim.boot = 6000  # type: ignore[union-attr]
        await roll_to(h, "large")

        def sizes() -> dict[str, int]:
            return {s.spec.template.spec.class_.name: s.spec.replicas for s in h.sets_of()}

        async def wait_sizes(expected: dict[str, int]) -> None:
            ok = await h.set_changes.wait_until(
                lambda: sizes() == expected, trio.current_time() + 60
            )
            assert ok, sizes()

        await wait_sizes({"small": 8, "large": 5})
        await h.patch({"spec": {"replicas": 15}})
        await wait_sizes({"small": 8, "large": 10})

        def sized_for_15() -> bool:
            return all(
                s.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "15"
                and s.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "18"
                for s in h.sets_of()
            )

        assert await h.set_changes.wait_until(sized_for_15, trio.current_time() + 60)
        # 18 - 10 = 8 fewer: large 10*8/18 = 4.4 -> 4 (-6), small 8*8/18 = 3.6 -> 4 (-4).
        await h.patch({"spec": {"replicas": 5}})
        await wait_sizes({"small": 4, "large": 4})
        h.sim.boot_now(60)  # type: ignore[union-attr]
        done = await h.wait_complete()
        assert done.status.updated_replicas == 5


@pytest.mark.slow
async def test_a_paused_deployment_scales_but_does_not_roll_until_resumed(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=2))
        await h.wait_complete()
        await h.patch({"spec": {"paused": True}})

        def paused(d: MachineDeployment | None) -> bool:
            cond = d.condition("Progressing") if d else None
            return cond is not None and cond.reason == "DeploymentPaused"

        await h.wait_deployment(paused)
        await roll_to(h, "large")
        generation = await h.patch({"spec": {"replicas": 3}})
        await h.wait_deployment(
            lambda d: d is not None and d.status.observed_generation >= generation
        )
        await trio.sleep(600)
        [machine_set] = h.sets_of()
        assert machine_set.spec.template.spec.class_.name == "small"
        assert machine_set.spec.replicas == 3
        deployment = h.deployment()
        assert deployment is not None and paused(deployment)  # a paused one never times out

        generation = await h.patch({"spec": {"paused": False}})
        await h.wait_complete(generation=generation)
        assert {s.spec.template.spec.class_.name: s.spec.replicas for s in h.sets_of()} == {
            "small": 0,
            "large": 3,
        }
        assert ("Normal", "ScalingMachineSet") in [(t, r) for t, r, _ in await h.events()]


@pytest.mark.slow
async def test_rollback_to_a_revision_brings_its_template_back(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=2))
        await h.wait_complete()
        await h.wait_complete(generation=await roll_to(h, "large"))
        await h.wait_complete(generation=await roll_to(h, "huge"))
        first = next(s for s in h.sets_of() if s.spec.template.spec.class_.name == "small")

        generation = await h.patch({"spec": {"rollbackTo": {"revision": 1}}})
        done = await h.wait_complete(generation=generation + 1)
        assert done.spec.rollback_to is None
        assert done.spec.template.spec.class_.name == "small"
        assert done.metadata.annotations["deployment.kubernetes.io/revision"] == "4"
        again = next(s for s in h.sets_of() if s.name == first.name)
        assert again.spec.replicas == 2  # the old set itself is scaled back up
        assert again.metadata.annotations["deployment.kubernetes.io/revision"] == "4"
        assert again.metadata.annotations["deployment.kubernetes.io/revision-history"] == "1"
        assert (
            "Normal",
            "DeploymentRollback",
            'Rolled back deployment "pool" to revision 1',
        ) in await h.events()

        # revision 0: the one before the current (3, "huge"); an unknown one is reported.
        generation = await h.patch({"spec": {"rollbackTo": {"revision": 0}}})
        done = await h.wait_complete(generation=generation + 1)
        assert done.spec.template.spec.class_.name == "huge"
        generation = await h.patch({"spec": {"rollbackTo": {"revision": 42}}})
        await h.wait_deployment(
            lambda d: (
                d is not None and d.spec.rollback_to is None and d.metadata.generation > generation
            )
        )
        assert (
            "Warning",
            "DeploymentRollbackRevisionNotFound",
            "Unable to find the revision to rollback to.",
        ) in await h.events()


async def test_old_sets_beyond_the_revision_history_limit_are_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=1, revisionHistoryLimit=1))
        await h.wait_complete()
        for machine_class in ("b", "c", "d"):
            await h.wait_complete(generation=await roll_to(h, machine_class))

        def two_left(_: object) -> bool:
            return len(h.sets_of()) == 2

        await h.set_changes.wait_until(lambda: two_left(None), trio.current_time() + 600)
        assert sorted(s.spec.template.spec.class_.name for s in h.sets_of()) == ["c", "d"]


async def test_progress_deadline_exceeded_when_new_machines_never_become_available(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu, boot=10_000) as h:
        emu.create(deployment_doc(replicas=2, progressDeadlineSeconds=300))
        started = trio.current_time()

        def timed_out(d: MachineDeployment | None) -> bool:
            cond = d.condition("Progressing") if d else None
            return cond is not None and cond.reason == "ProgressDeadlineExceeded"

        deployment = await h.wait_deployment(timed_out, within=2000)
        assert deployment is not None
        assert 300 <= trio.current_time() - started <= 330
        cond = deployment.condition("Progressing")
        assert cond is not None and cond.status == "False"
        assert cond.message.startswith('MachineSet "pool-') and cond.message.endswith(
            '" has timed out progressing.'
        )
        available = deployment.condition("Available")
        assert available is not None and available.status == "False"


@pytest.mark.slow
async def test_an_invalid_deployment_is_reported_and_others_go_on(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        bad = deployment_doc(
            "bad", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}
        )
        emu.create(bad)
        emu.create(deployment_doc("good", replicas=1))
        await h.wait_complete("good")
        events = await h.events("bad")
        assert (
            "Warning",
            "InvalidSpec",
            'spec.strategy.rollingUpdate.maxSurge: "lots" is not a percentage (like "25%") nor '
            "an integer",
        ) in events
        assert h.sets_of("bad") == []
        await trio.sleep(1800)  # resyncs: the same generation is not reported again
        assert [r for _, r, _ in await h.events("bad")].count("InvalidSpec") == 1
        # A bad spec does not keep its deletion from finishing.
        emu.delete(MACHINE_API, "MachineDeployment", "bad", "default")
        await h.wait_deployment(lambda d: d is None, "bad")


async def test_deleting_a_deployment_deletes_its_sets_then_releases_it(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=2))
        await h.wait_complete()
        emu.delete(MACHINE_API, "MachineDeployment", "pool", "default")
        await h.wait_deployment(lambda d: d is None)
        await h.set_changes.wait_until(lambda: not h.sets.list("default"), trio.current_time() + 60)


@pytest.mark.kubectl
async def test_kubectl_scale_resizes_a_deployment(
    emu: Emulator, mock_clock: trio.testing.MockClock, kubectl: Kubectl
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=2))
        await h.wait_complete()
        with request_in_flight():  # kubectl's requests: the clock must not jump meanwhile
            out = await kubectl.out("scale", "machinedeployment/pool", "--replicas=5")
        assert "scaled" in out
        done = await h.wait_complete(generation=2)
        assert done.spec.replicas == 5
        [machine_set] = h.sets_of()
        assert machine_set.spec.replicas == 5


TRIGGER = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
PREFER_NO_SCHEDULE = "deployment.machine.sapcloud.io/prefer-no-schedule"


def machine_of(name: str, machine_set: MachineSet, node: str = "") -> dict[str, Any]:
    """A Machine object owned by ``machine_set`` (no machine controller runs here)."""
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"name": "pool", **({"node": node} if node else {})},
            "ownerReferences": [
                {
                    "apiVersion": MACHINE_API,
                    "kind": "MachineSet",
                    "name": machine_set.name,
                    "uid": machine_set.metadata.uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"class": {"kind": "MachineClass", "name": "small"}},
    }


async def test_machines_the_autoscaler_names_get_deletion_priority(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=2))
        await h.wait_complete()
        [machine_set] = h.sets_of()
        for name in ("m-1", "m-2"):
            emu.create(machine_of(name, machine_set))
            await h.wait_cached_machine(name)
        await h.patch(
            {
                "metadata": {
                    "annotations": {
                        "node.machine.sapcloud.io/trigger-deletion-by-mcm": (
                            "m-1~2026-01-01T00:00:00Z,m-2,gone~2026-01-01T00:00:00Z"
                        )
                    }
                },
                "spec": {"replicas": 1},
            }
        )

        def marked(d: MachineDeployment | None) -> bool:
            value = d.metadata.annotations.get(TRIGGER) if d else None
            return value is not None and "gone" not in value

        deployment = await h.wait_deployment(marked)
        assert deployment is not None
        await h.machine_changes.wait_until(
            lambda: all(
                (m := h.reconciler.machines.get("default", n)) is not None
                and "machine.sapcloud.io/marked-for-deletion-time" in m.metadata.annotations
                for n in ("m-1", "m-2")
            ),
            trio.current_time() + 60,
        )
        stamp = deployment.metadata.annotations[
            "machine.sapcloud.io/last-deployment-replica-change-by-scaler-time"
        ]
        assert deployment.metadata.annotations[TRIGGER] == f"m-1~2026-01-01T00:00:00Z,m-2~{stamp}"
        m1 = await h.client.get(Machine, "m-1", namespace="default")
        m2 = await h.client.get(Machine, "m-2", namespace="default")
        assert m1.metadata.annotations == {
            "machinepriority.machine.sapcloud.io": "1",
            "machine.sapcloud.io/marked-for-deletion-time": "2026-01-01T00:00:00Z",
        }
        assert m2.metadata.annotations["machine.sapcloud.io/marked-for-deletion-time"] == stamp
        # Once the set removed it (here: it is gone), its entry goes too.
        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_deployment(
            lambda d: d is not None and d.metadata.annotations.get(TRIGGER) == f"m-2~{stamp}",
            within=700,
        )


async def test_nodes_are_kept_from_the_autoscaler_during_a_rollout(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=1))
        await h.wait_complete()
        [machine_set] = h.sets_of()
        emu.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "node-2",
                    "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
                },
            }
        )
        emu.create(machine_of("m-1", machine_set, node="node-1"))
        emu.create(machine_of("m-2", machine_set, node="node-2"))
        await h.wait_cached_machine("m-2")
        generation = await roll_to(h, "large")

        def annotations(name: str) -> dict[str, str]:
            node = h.reconciler.nodes.get("", name)
            return dict(node.metadata.annotations) if node else {}

        during = {
            "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
            "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm": "true",
        }
        assert await h.node_changes.wait_until(
            lambda: annotations("node-1") == during, trio.current_time() + 30
        )
        assert len(h.sets_of()) == 2  # during the rollout
        await h.wait_complete(generation=generation)
        # The pass that finds the rollout complete removes what it added.
        assert await h.node_changes.wait_until(
            lambda: annotations("node-1") == {}, trio.current_time() + 700
        )
        # The user's own annotation on node-2 was there before: it stays.
        assert annotations("node-2") == {
            "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"
        }

        # The old set's nodes are tainted so pods prefer the new machines meanwhile...
        def tainted(name: str) -> bool:
            node = h.reconciler.nodes.get("", name)
            return node is not None and any(
                (t.key, t.value, t.effect) == (PREFER_NO_SCHEDULE, "True", "PreferNoSchedule")
                for t in node.spec.taints
            )

        assert tainted("node-1") and tainted("node-2")
        old = h.sets.get("default", machine_set.name)
        assert old is not None and old.metadata.annotations[PREFER_NO_SCHEDULE] == "True"
        # ...until that set comes back: a rollback untaints them first.
        generation = await h.patch({"spec": {"rollbackTo": {"revision": 1}}})
        await h.wait_complete(generation=generation + 1)
        assert await h.node_changes.wait_until(
            lambda: not tainted("node-1") and not tainted("node-2"), trio.current_time() + 60
        )
        back = h.sets.get("default", machine_set.name)
        assert back is not None and PREFER_NO_SCHEDULE not in back.metadata.annotations


async def test_a_matching_orphan_set_is_adopted_and_a_set_that_stops_matching_released(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        template = deployment_doc()["spec"]["template"]
        emu.create(
            {
                "apiVersion": MACHINE_API,
                "kind": "MachineSet",
                "metadata": {"name": "orphan", "namespace": "default", "labels": {"name": "pool"}},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"name": "pool"}},
                    "template": template,
                },
            }
        )
        emu.create(deployment_doc(replicas=2))
        done = await h.wait_complete()
        # The orphan has the deployment's template: adopted, it is the current set.
        assert [s.name for s in h.sets_of()] == ["orphan"]
        assert done.status.updated_replicas == 2

        await h.client.patch(
            MachineSet,
            "orphan",
            {"metadata": {"labels": {"name": "elsewhere"}}},
            namespace="default",
        )
        ok = await h.set_changes.wait_until(
            lambda: (
                (s := h.sets.get("default", "orphan")) is not None
                and s.metadata.controller_ref() is None
            ),
            trio.current_time() + 60,
        )
        assert ok
        # Released, it no longer counts: the deployment makes a set of its own.
        ok = await h.set_changes.wait_until(
            lambda: [s.name for s in h.sets_of()] not in ([], ["orphan"]),
            trio.current_time() + 60,
        )
        assert ok and len(h.sets_of()) == 1


async def set_untainted(h: DeploymentHarness, name: str) -> bool:
    """Whether the set loses its rollout-taint annotation within a minute (it goes after its
    nodes' taints)."""
    return await h.set_changes.wait_until(
        lambda: (
            (current := h.sets.get("default", name)) is not None
            and PREFER_NO_SCHEDULE not in current.metadata.annotations
        ),
        trio.current_time() + 60,
    )


async def test_a_reverted_template_untaints_its_nodes_once_the_rollout_completes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM #989: a rollout backtracked by reverting the template (not a rollback) makes the
    tainted old set current again; when that rollout completes its nodes lose the taint."""
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=1))
        await h.wait_complete()
        [machine_set] = h.sets_of()
        emu.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
        emu.create(machine_of("m-1", machine_set, node="node-1"))
        await h.wait_cached_machine("m-1")

        def tainted() -> bool:
            node = h.reconciler.nodes.get("", "node-1")
            return node is not None and any(
                (t.key, t.value, t.effect) == (PREFER_NO_SCHEDULE, "True", "PreferNoSchedule")
                for t in node.spec.taints
            )

        await roll_to(h, "large")
        assert await h.node_changes.wait_until(tainted, trio.current_time() + 30)
        generation = await roll_to(h, "small")
        await h.wait_complete(generation=generation)
        assert await h.node_changes.wait_until(lambda: not tainted(), trio.current_time() + 60)
        # The set's annotation goes after its nodes' taints.
        assert await set_untainted(h, machine_set.name)


async def test_a_rollback_to_the_current_revision_untaints_its_set_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's ``rollback`` clears the target set's nodes before comparing templates: a rollback
    that changes nothing (the set is current already, tainted by an earlier rollout) still
    untaints them."""
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(deployment_doc(replicas=1))
        await h.wait_complete()
        [machine_set] = h.sets_of()
        taint = {"key": PREFER_NO_SCHEDULE, "value": "True", "effect": "PreferNoSchedule"}
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "node-1"},
                "spec": {"taints": [taint]},
            }
        )
        emu.create(machine_of("m-1", machine_set, node="node-1"))
        await h.wait_cached_machine("m-1")
        await h.client.patch(
            MachineSet,
            machine_set.name,
            {"metadata": {"annotations": {PREFER_NO_SCHEDULE: "True"}}},
            namespace="default",
        )
        assert await h.set_changes.wait_until(
            lambda: (
                (current := h.sets.get("default", machine_set.name)) is not None
                and PREFER_NO_SCHEDULE in current.metadata.annotations
                and h.reconciler.nodes.get("", "node-1") is not None
            ),
            trio.current_time() + 30,
        )
        await h.patch({"spec": {"rollbackTo": {"revision": 1}}})

        # Untainted in the rollback's own pass: before rollbackTo is cleared, not after.
        cleared = await h.deployment_changes.wait_until(
            lambda: (d := h.deployment()) is not None and d.spec.rollback_to is None,
            trio.current_time() + 60,
        )
        assert cleared
        node = await h.client.get(Node, "node-1")  # the cache of nodes may lag the deployments'
        assert all(t.key != PREFER_NO_SCHEDULE for t in node.spec.taints)
        # The set's annotation goes after its nodes' taints.
        assert await set_untainted(h, machine_set.name)


async def test_nodes_are_left_to_the_autoscaler_during_a_rollout_when_told(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """MCM's ``--autoscaler-scaledown-annotation-during-rollout=false``: the rollout still
    taints the old set's nodes, but never annotates any node for the autoscaler."""
    install_crds(emu)
    options = MachineOptions(autoscaler_scale_down_annotation_during_rollout=False)
    async with deployment_manager(emu, options=options) as h:
        annotated: list[str] = []

        def seen(node: Node) -> None:
            if "cluster-autoscaler.kubernetes.io/scale-down-disabled" in node.metadata.annotations:
                annotated.append(node.name)

        h.manager.cache.informer(Node).add_handler(
            EventHandler(on_add=lambda n, _i: seen(n), on_update=lambda _o, n: seen(n))
        )
        emu.create(deployment_doc(replicas=1))
        await h.wait_complete()
        [machine_set] = h.sets_of()
        emu.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
        emu.create(machine_of("m-1", machine_set, node="node-1"))
        await h.wait_cached_machine("m-1")
        generation = await roll_to(h, "large")

        def tainted() -> bool:
            node = h.reconciler.nodes.get("", "node-1")
            return node is not None and any(t.key == PREFER_NO_SCHEDULE for t in node.spec.taints)

        assert await h.node_changes.wait_until(tainted, trio.current_time() + 30)
        await h.wait_complete(generation=generation)
        assert annotated == []
