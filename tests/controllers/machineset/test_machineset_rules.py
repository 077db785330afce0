"""The MachineSet controller's pure rules: MCM's deletion order, client-go's expectations
(on a MockClock), the status MCM computes and the validation it applies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import trio
import trio.testing

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.api.meta import format_time
from kubetrio.controllers.machineset.expectations import EXPECTATIONS_TIMEOUT, Expectations
from kubetrio.controllers.machineset.priority import machines_to_delete, marked_for_deletion
from kubetrio.controllers.machineset.reconciler import validate
from kubetrio.controllers.machineset.status import compute_status, status_patch

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def machine(
    name: str,
    phase: str = "Running",
    *,
    created: int = 0,
    priority: str | None = None,
    marked: str | None = None,
    labels: dict[str, str] | None = None,
    ready_since: int | None = None,
    failed: bool = False,
) -> Machine:
    annotations: dict[str, str] = {}
    if priority is not None:
        annotations["machinepriority.machine.sapcloud.io"] = priority
    if marked is not None:
        annotations["machine.sapcloud.io/marked-for-deletion-time"] = marked
    doc: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": format_time(NOW + timedelta(seconds=created)),
            "annotations": annotations,
            "labels": labels if labels is not None else {"set": "s"},
        },
        "status": {"currentStatus": {"phase": phase}},
    }
    if ready_since is not None:
        doc["status"]["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": format_time(NOW - timedelta(seconds=ready_since)),
            }
        ]
    if failed:
        doc["status"]["lastOperation"] = {"state": "Failed", "type": "HealthCheck"}
    return msgspec.convert(doc, Machine)


def machine_set(spec_replicas: int = 2, min_ready: int = 0, **status: Any) -> MachineSet:
    return msgspec.convert(
        {
            "metadata": {"name": "s", "namespace": "default", "generation": 2},
            "spec": {
                "replicas": spec_replicas,
                "minReadySeconds": min_ready,
                "selector": {"matchLabels": {"set": "s"}},
                "template": {
                    "metadata": {"labels": {"set": "s", "extra": "x"}},
                    "spec": {"class": {"name": "small"}},
                },
            },
            "status": status,
        },
        MachineSet,
    )


def order(machines: list[Machine]) -> list[str]:
    return [m.name for m in machines_to_delete(machines, len(machines))]


def test_priority_annotation_comes_first_unparsable_counts_as_three() -> None:
    ms = [machine("a", priority="3"), machine("b", priority="1"), machine("c", priority="x")]
    assert order(ms) == ["b", "a", "c"]
    assert order([machine("a", priority="5"), machine("b")]) == ["b", "a"]


def test_marked_for_deletion_earliest_first_then_unmarked() -> None:
    ms = [
        machine("unmarked", "Failed"),
        machine("late", marked="2026-01-01T12:05:00Z"),
        machine("early", marked="2026-01-01T12:01:00Z"),
    ]
    assert order(ms) == ["early", "late", "unmarked"]


def test_phases_in_mcm_order_a_machine_without_phase_first() -> None:
    phases = ["Running", "Available", "Pending", "Unknown", "CrashLoopBackOff", "Failed"]
    ms = [machine(p, p) for p in phases] + [machine("new", "")]
    assert order(ms) == ["new", *reversed(phases)]


def preserved(m: Machine, until: datetime, auto: bool = False) -> Machine:
    status = msgspec.structs.replace(
        m.status,
        current_status=msgspec.structs.replace(
            m.status.current_status, preserve_expiry_time=format_time(until)
        ),
    )
    annotations = {"node.machine.sapcloud.io/preserve": "auto-preserved" if auto else "now"}
    metadata = msgspec.structs.replace(m.metadata, annotations=annotations)
    return msgspec.structs.replace(m, status=status, metadata=metadata)


def test_preserved_machines_go_last_auto_preserved_first_then_the_earliest_to_expire() -> None:
    """MCM v0.62's ActiveMachines: preservation outranks priority; an expired one counts as
    not preserved."""
    start = datetime.now(UTC)  # the run's clock starts from the wall clock
    later, sooner = start + timedelta(hours=2), start + timedelta(hours=1)
    ms = [
        preserved(machine("user-later", "Failed"), later),
        preserved(machine("user-sooner", "Failed"), sooner),
        preserved(machine("auto", "Failed"), later, auto=True),
        preserved(machine("expired", "Failed"), start - timedelta(hours=1)),
        machine("plain", priority="5"),
    ]

    async def main() -> list[str]:
        return order(ms)

    result = trio.run(main, clock=trio.testing.MockClock())
    assert result == ["expired", "plain", "auto", "user-sooner", "user-later"]


def test_same_rank_deletes_the_oldest_first_as_mcm() -> None:
    ms = [machine("young", created=60), machine("old", created=0), machine("mid", created=30)]
    assert order(ms) == ["old", "mid", "young"]
    assert [m.name for m in machines_to_delete(ms, 1)] == ["old"]


async def test_expectations_wait_for_creations_and_named_deletions(
    autojump_clock: trio.testing.MockClock,
) -> None:
    e: Expectations[str] = Expectations()
    assert e.satisfied("k") and e.expires_in("k") is None
    e.expect_creations("k", 2)
    e.creation_observed("k")
    assert not e.satisfied("k") and e.pending("k") == (1, 0)
    e.creation_observed("k")
    assert e.satisfied("k")
    e.expect_deletions("k", ["a", "b"])
    e.deletion_observed("k", "a")
    e.deletion_observed("k", "a")  # the deletion timestamp, then the removal: counted once
    e.deletion_observed("k", "other")
    assert not e.satisfied("k") and e.pending("k") == (0, 1)
    e.deletion_observed("k", "b")
    assert e.satisfied("k")


async def test_expectations_expire_after_five_minutes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    e: Expectations[str] = Expectations()
    e.expect_creations("k", 1)
    assert e.expires_in("k") == EXPECTATIONS_TIMEOUT == 300
    await trio.sleep(299)
    assert not e.satisfied("k")
    await trio.sleep(2)
    assert e.satisfied("k") and e.expires_in("k") is None
    e.forget("k")
    assert e.pending("k") == (0, 0)


def test_status_counts_ready_available_labels_and_failures() -> None:
    ms = machine_set(3)
    machines = [
        machine("a", labels={"set": "s", "extra": "x"}),
        machine("b", "Pending"),
        machine("c", "Failed", failed=True),
    ]
    status, wait = compute_status(ms, machines, None, NOW)
    assert status["replicas"] == 3
    assert status["readyReplicas"] == 1 and status["availableReplicas"] == 1
    assert status["fullyLabeledReplicas"] == 1
    assert status["failedMachines"] == [
        {
            "name": "c",
            "providerID": None,
            "lastOperation": {"state": "Failed", "type": "HealthCheck"},
            "ownerRef": None,
        }
    ]
    assert wait is None and status["machineSetCondition"] is None


def test_a_preserved_failed_machine_is_counted_apart_not_as_a_failure() -> None:
    """MCM's ``calculateMachineSetStatus``: a Failed machine being preserved counts in
    ``preservedFailedReplicas`` and is left out of ``failedMachines`` (which would mark its
    deployment unavailable)."""
    kept = preserved(machine("kept", "Failed", failed=True), NOW + timedelta(hours=1), auto=True)
    machines = [kept, machine("gone", "Failed", failed=True)]
    status, _ = compute_status(machine_set(2), machines, None, NOW)
    assert [m["name"] for m in status["failedMachines"]] == ["gone"]
    assert status["preservedFailedReplicas"] == 1
    assert status["autoPreserveFailedMachineCount"] == 1


def test_min_ready_seconds_delays_availability() -> None:
    ms = machine_set(2, min_ready=60)
    status, wait = compute_status(
        ms, [machine("a", ready_since=100), machine("b", ready_since=20)], None, NOW
    )
    assert status["readyReplicas"] == 2 and status["availableReplicas"] == 1
    assert wait == 40


def test_replica_failure_condition_set_and_cleared() -> None:
    ms = machine_set(3)
    status, _ = compute_status(ms, [machine("a")], "quota exceeded", NOW)
    (condition,) = status["machineSetCondition"]
    assert condition["type"] == "ReplicaFailure" and condition["reason"] == "FailedCreate"
    assert condition["message"] == "quota exceeded"
    failing = machine_set(3, machineSetCondition=[condition])
    status, _ = compute_status(failing, [machine("a")], None, NOW)
    assert status["machineSetCondition"] is None


def test_status_written_only_on_change() -> None:
    ms = machine_set(1, replicas=1, readyReplicas=1, availableReplicas=1, observedGeneration=2)
    # "a" lacks the template's "extra" label: fully labeled stays 0, as the status says
    status, _ = compute_status(ms, [machine("a", labels={"set": "s"})], None, NOW)
    assert status_patch(ms, status, NOW) is None
    status, _ = compute_status(ms, [], None, NOW)
    patch = status_patch(ms, status, NOW)
    assert patch is not None
    assert patch["status"]["replicas"] is None  # zero counts removed, as MCM's omitempty
    assert patch["status"]["observedGeneration"] == 2


def test_validation_names_the_field() -> None:
    assert validate(machine_set()) is None
    bad = msgspec.structs.replace(
        machine_set(), spec=msgspec.structs.replace(machine_set().spec, selector=None)
    )
    assert validate(bad) == "spec.selector: Required value"
    spec = machine_set().spec
    wrong = msgspec.convert(
        {"metadata": {"name": "s"}, "spec": {**msgspec.to_builtins(spec), "replicas": -1}},
        MachineSet,
    )
    assert validate(wrong) == "spec.replicas: Required value: Replicas has to be a whole number"
    unmatched = msgspec.convert(
        {
            "metadata": {"name": "s"},
            "spec": {**msgspec.to_builtins(spec), "selector": {"matchLabels": {"set": "t"}}},
        },
        MachineSet,
    )
    assert (validate(unmatched) or "").startswith("spec.selector.matchLabels: Required value")


def test_machines_marked_by_the_autoscaler_go_once_it_changed_the_replicas_since() -> None:
    """MCM's ``getMachinesMarkedForDeletion``: priority "1" and marked no later than the set's
    last replica change by the autoscaler; a malformed time, or none on the set, marks none."""
    change = format_time(NOW)
    before, after = format_time(NOW - timedelta(seconds=5)), format_time(NOW + timedelta(seconds=5))
    machines = [
        machine("early", priority="1", marked=before),
        machine("same", priority="1", marked=change),
        machine("later", priority="1", marked=after),
        machine("unprioritised", priority="3", marked=before),
        machine("unmarked", priority="1"),
        machine("garbled", priority="1", marked="yesterday"),
    ]
    annotations = {"machine.sapcloud.io/last-deployment-replica-change-by-scaler-time": change}
    assert [m.name for m in marked_for_deletion(machines, annotations)] == ["early", "same"]
    assert marked_for_deletion(machines, {}) == []
    garbled = {"machine.sapcloud.io/last-deployment-replica-change-by-scaler-time": "soon"}
    assert marked_for_deletion(machines, garbled) == []
