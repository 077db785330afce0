"""The MachineDeployment controller end to end on the emulator (MockClock), its MachineSets'
machines simulated by ``SetSimulator``: revisions, rolling updates within maxSurge and
maxUnavailable, Recreate, proportional scaling, pause, rollback, history cleanup and the
progress deadline."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.runtime.emulator import Emulator

from .deployments import DeploymentHarness, deployment_doc, deployment_manager
from .machines import install_crds


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
