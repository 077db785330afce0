"""MCM's ``mcm_machine_deployment_*`` gauges of the MachineDeployment controller, read from
the manager's registry (in the Prometheus text format too) while the controller runs against
the emulator: spec, status, conditions and failed machines per deployment, and series that
stop with their deployment."""

from __future__ import annotations

import datetime as dt

import pytest
import trio
import trio.testing
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.machineset import MachineDeployment
from kubetrio.emulator import Emulator
from kubetrio.runtime.util.inflight import request_in_flight
from tests.helpers.deployments import DeploymentHarness, deployment_doc, deployment_manager
from tests.helpers.kube import Kubectl
from tests.helpers.machines import MACHINE_API, install_crds

POOL = {"name": "pool", "namespace": "default"}

FAILED = {
    "name": "pool-abcde",
    "providerID": "sim:///vm-7",
    "ownerRef": "pool-5d8f",
    "lastOperation": {
        "description": "Machine pool-abcde failed health check",
        "state": "Failed",
        "type": "HealthCheck",
    },
}


def sample(h: DeploymentHarness, name: str, labels: dict[str, str] = POOL) -> float | None:
    return h.manager.registry.get_sample_value(f"mcm_machine_deployment_{name}", labels)


@pytest.mark.kubectl
async def test_deployment_gauges_follow_spec_and_status(
    emu: Emulator, mock_clock: trio.testing.MockClock, kubectl: Kubectl
) -> None:
    install_crds(emu)
    async with deployment_manager(emu) as h:
        emu.create(
            deployment_doc(
                replicas=3,
                strategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"},
                },
                revisionHistoryLimit=4,
                progressDeadlineSeconds=900,
                minReadySeconds=30,
            )
        )
        emu.create(deployment_doc("other", replicas=1, strategy={"type": "Recreate"}, paused=True))
        done = await h.wait_complete()

        assert sample(h, "items_total", {}) == 2
        created = dt.datetime.fromisoformat(str(done.metadata.creation_timestamp))
        info = {
            **POOL,
            "createdAt": str(int(created.timestamp())),
            "spec_strategy_type": "RollingUpdate",
        }
        assert sample(h, "info", info) == 1
        assert sample(h, "info_spec_replicas") == 3
        assert sample(h, "info_spec_paused") == 0
        assert sample(h, "info_spec_min_ready_seconds") == 30
        assert sample(h, "info_spec_rolling_update_max_surge") == 2
        # MCM reports IntOrString.IntValue(): a percentage is 0.
        assert sample(h, "info_spec_rolling_update_max_unavailable") == 0
        assert sample(h, "info_spec_revision_history_limit") == 4
        assert sample(h, "info_spec_progress_deadline_seconds") == 900
        assert sample(h, "info_spec_rollback_to_revision") is None
        assert sample(h, "status_replicas") == 3
        assert sample(h, "status_updated_replicas") == 3
        assert sample(h, "status_ready_replicas") == 3
        assert sample(h, "status_available_replicas") == 3
        assert sample(h, "status_unavailable_replicas") == 0
        assert sample(h, "status_condition", {**POOL, "condition": "Available"}) == 1
        assert sample(h, "status_condition", {**POOL, "condition": "Progressing"}) == 1

        other = {"name": "other", "namespace": "default"}
        assert sample(h, "info_spec_paused", other) == 1
        # Recreate has no rolling-update bounds; unset optional fields have no series.
        assert sample(h, "info_spec_rolling_update_max_surge", other) is None
        assert sample(h, "info_spec_revision_history_limit", other) is None

        # A scale-up (kubectl's) shows as desired above available until the new machines boot.
        with request_in_flight():  # kubectl's requests: the clock must not jump meanwhile
            await kubectl.out("scale", "machinedeployment/pool", "--replicas=5")
        await h.wait_deployment(lambda d: d is not None and d.status.unavailable_replicas == 2)
        assert sample(h, "info_spec_replicas") == 5
        assert sample(h, "status_available_replicas") == 3
        assert sample(h, "status_unavailable_replicas") == 2
        await h.wait_complete()
        assert sample(h, "status_available_replicas") == 5
        with request_in_flight():
            seen = await kubectl.out(
                "get", "machinedeployment/pool", "-o", "jsonpath={.status.availableReplicas}"
            )
        assert float(seen) == sample(h, "status_available_replicas")

        # Help texts and types as MCM's, in the exposition format a scrape reads.
        families = {
            f.name: f
            for f in text_string_to_metric_families(generate_latest(h.manager.registry).decode())
        }
        family = families["mcm_machine_deployment_status_available_replicas"]
        assert family.type == "gauge"
        assert (
            family.documentation
            == "Count of the mcm managed Machinedeployments available replicas."
        )

        # A deleted deployment's series stop.
        emu.delete(MACHINE_API, "MachineDeployment", "other", "default")
        await h.wait_deployment(lambda d: d is None, "other")
        assert sample(h, "items_total", {}) == 1
        assert sample(h, "info_spec_paused", other) is None


async def test_failed_machines_of_a_deployments_sets_are_exported(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with deployment_manager(emu, simulate_sets=False) as h:
        emu.create(deployment_doc(replicas=1))
        ok = await h.set_changes.wait_until(lambda: bool(h.sets_of()), trio.current_time() + 60)
        assert ok
        [machine_set] = h.sets_of()
        emu.set_status(
            MACHINE_API,
            "MachineSet",
            machine_set.name,
            {"replicas": 1, "failedMachines": [FAILED]},
            "default",
        )

        def reported(d: MachineDeployment | None) -> bool:
            return d is not None and bool(d.status.failed_machines)

        await h.wait_deployment(reported)
        labels = {
            **POOL,
            "failed_machine_name": "pool-abcde",
            "failed_machine_provider_id": "sim:///vm-7",
            "failed_machine_owner_ref": "pool-5d8f",
            "failed_machine_last_operation_state": "Failed",
            "failed_machine_last_operation_machine_operation_type": "HealthCheck",
        }
        assert sample(h, "failed_machines", labels) == 1

        # Replaced: the set no longer reports it, and neither does the gauge.
        emu.set_status(MACHINE_API, "MachineSet", machine_set.name, {"replicas": 1}, "default")
        await h.wait_deployment(lambda d: d is not None and not d.status.failed_machines)
        assert sample(h, "failed_machines", labels) is None
