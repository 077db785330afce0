"""The embedded demo's live view and summary as pure functions of MachineSet, Machine, Node and
Pod objects: the step shown for every lastOperation of MCM's flows, the rows, the plain lines a
pipe gets, the milestones and phases the summary measures, and the rich tables."""

from __future__ import annotations

import errno
import io
from typing import Any

import msgspec
import pytest
from rich.console import Console
from rich.text import Text

from kubetrio.api.core import Node, Pod
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.cmd.demo.output import Output
from kubetrio.cmd.demo.summary import (
    Timeline,
    phase_table,
    summary_lines,
    summary_rows,
    summary_table,
)
from kubetrio.cmd.demo.view import (
    MachineRow,
    SetRow,
    StorageRow,
    event_line,
    gone_line,
    machine_rows,
    machine_step,
    machine_table,
    natural_key,
    plain_line,
    pods_per_node,
    set_gone_line,
    set_line,
    set_rows,
    set_table,
    storage_line,
    storage_rows,
)
from kubetrio.controllers.storage.backend import StorageNode

T0 = "2026-11-23T12:00:00Z"


def machine(
    name: str = "demo-1",
    phase: str = "",
    description: str = "",
    state: str = "",
    *,
    node: str = "",
    deleting: bool = False,
    error_code: str = "",
    owner: str = "",
) -> Machine:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"name": "demo"}}
    if owner:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "machine.sapcloud.io/v1alpha1",
                "kind": "MachineSet",
                "name": owner,
                "uid": "u-1",
                "controller": True,
            }
        ]
    if node:
        metadata["labels"]["node"] = node
    if deleting:
        metadata["deletionTimestamp"] = T0
    return msgspec.convert(
        {
            "metadata": metadata,
            "status": {
                "currentStatus": {"phase": phase},
                "lastOperation": {
                    "description": description,
                    "state": state,
                    "errorCode": error_code,
                },
            },
        },
        Machine,
    )


def node(name: str, ready: str | None = "True") -> Node:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return msgspec.convert({"metadata": {"name": name}, "status": {"conditions": conditions}}, Node)


def pod(name: str, node_name: str, *, phase: str = "Running", deleting: bool = False) -> Pod:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if deleting:
        metadata["deletionTimestamp"] = T0
    return msgspec.convert(
        {"metadata": metadata, "spec": {"nodeName": node_name}, "status": {"phase": phase}}, Pod
    )


# The lastOperation descriptions MCM's deletion flow writes, word for word, and the step each
# means.
DELETION_DESCRIPTIONS = [
    ("Set machine status to termination. Now, getting VM Status", "Processing", "get VM status"),
    ("Machine deletion in process. VM with matching ID found. Initiate node drain", "", "drain"),
    (
        "Drain failed due to - timeout. Will retry in next sync. Initiate node drain",
        "Failed",
        "drain (retrying)",
    ),
    ("Drain successful. Initiate VM deletion", "Processing", "delete VM"),
    ("Force Drain successful. Delete Volume Attachments", "", "delete volume attachments"),
    (
        "No Live VolumeAttachments for node: demo-2. Initiate VM deletion",
        "Processing",
        "delete VM",
    ),
    ("VM deletion was successful. Initiate node object deletion", "", "delete node"),
    ("VM was not found at provider. Initiate node object deletion", "", "delete node"),
    (
        'Deletion of Node Object "demo-2" is successful. Initiate machine object finalizer removal',
        "",
        "remove finalizer",
    ),
    ("", "", "deletion requested"),
]


@pytest.mark.parametrize(("description", "state", "step"), DELETION_DESCRIPTIONS)
def test_deletion_steps_from_mcm_descriptions(description: str, state: str, step: str) -> None:
    assert machine_step(machine("m", "Terminating", description, state)) == step
    # A deletionTimestamp alone (the phase not yet Terminating) is already the deletion flow.
    assert machine_step(machine("m", "Running", description, state, deleting=True)) == step


def test_creation_steps() -> None:
    assert machine_step(machine()) == "waiting for controller"
    assert machine_step(machine(node="m")) == "creating VM"
    pending = machine("m", "Pending", "Creating machine on cloud provider", "Processing")
    assert machine_step(pending) == "booting VM"
    assert machine_step(pending, node("m", ready=None)) == "joining"
    assert machine_step(pending, node("m", ready="False")) == "joining"
    assert machine_step(pending, node("m")) == "node Ready"
    assert machine_step(machine("m", "Running", "Machine m successfully joined")) == "running"
    crash = machine(
        "m", "CrashLoopBackOff", "Cloud provider message - x", "Failed", error_code="Internal"
    )
    assert machine_step(crash) == "create failed (Internal), retrying"
    assert machine_step(machine("m", "Unknown")) == "unhealthy"
    assert machine_step(machine("m", "Failed")) == "failed"


def with_status(m: Machine, **status: Any) -> Machine:
    """``m`` with fields of its status replaced (camelCase keys, as the API has them)."""
    document = msgspec.to_builtins(m)
    for key, value in status.items():
        if key == "preserveExpiryTime":
            document["status"]["currentStatus"][key] = value
        else:
            document["status"][key] = value
    return msgspec.convert(document, Machine)


@pytest.mark.parametrize(
    ("reason", "step"),
    [
        ("SelectedForUpdate", "selected for update"),
        ("DrainSuccessful", "drained for update"),
        ("ReadyForUpdate", "updating in place"),
        ("", "updating in place"),
    ],
)
def test_in_place_steps_from_the_copied_node_condition(reason: str, step: str) -> None:
    updating = machine("m", "InPlaceUpdating")
    if reason:
        condition = {"type": "InPlaceUpdate", "status": "True", "reason": reason}
        updating = with_status(updating, conditions=[condition])
    assert machine_step(updating) == step
    assert machine_step(machine("m", "InPlaceUpdateSuccessful")) == "updated in place"


def test_preserved_machines_say_so() -> None:
    until = "2026-12-02T12:00:00Z"
    assert machine_step(with_status(machine("m", "Failed"), preserveExpiryTime=until)) == (
        "failed, preserved"
    )
    assert machine_step(with_status(machine("m", "Running"), preserveExpiryTime=until)) == (
        "running, preserved"
    )


def test_rows_join_machines_nodes_and_pods() -> None:
    machines = [
        machine("demo-2", "Pending", "Creating machine on cloud provider", "Processing"),
        machine("demo-1", "Running", "joined", "Successful", node="demo-1", owner="demo-abc"),
    ]
    pods = pods_per_node(
        [
            pod("a", "demo-1"),
            pod("b", "demo-1"),
            pod("c", "demo-1", deleting=True),  # on its way out: not counted
            pod("d", "demo-1", phase="Succeeded"),
            pod("e", ""),  # not scheduled
        ]
    )
    assert pods == {"demo-1": 2}
    rows = machine_rows(
        machines,
        {"demo-1": node("demo-1"), "demo-2": node("demo-2", ready="False")},
        pods,
        {"demo-1": 10.0},
        now=12.5,
    )
    assert [r.name for r in rows] == ["demo-1", "demo-2"]
    one, two = rows
    assert (one.machine_set, one.phase, one.step, one.node, one.pods, one.age) == (
        "demo-abc",
        "Running",
        "running",
        "demo-1",
        2,
        2.5,
    )
    # Before the controller labels it, the VM's node is found under the machine's own name.
    assert (two.machine_set, two.step, two.node, two.pods, two.age) == ("", "joining", "", 0, None)


def test_plain_lines_are_logfmt() -> None:
    row = MachineRow(
        name="demo-2",
        machine_set="demo-abc",
        phase="Terminating",
        step="drain",
        operation='Drain "x" failed',
        operation_state="Failed",
        node="demo-2",
        pods=3,
        age=4.0,
        deleting=True,
    )
    assert plain_line(12.34, row) == (
        "t=12.3s machine=demo-2 set=demo-abc phase=Terminating step=drain node=demo-2 pods=3 "
        'op="Drain \\"x\\" failed"'
    )
    assert gone_line(20, "demo-2") == "t=20.0s machine=demo-2 phase=- step=gone"
    assert event_line(1, "scaling down", deleting="demo-3,demo-4") == (
        't=1.0s demo="scaling down" deleting=demo-3,demo-4'
    )


def row(name: str, phase: str, step: str, *, deleting: bool = False, pods: int = 0) -> MachineRow:
    return MachineRow(name, "demo-abc", phase, step, "", "", name, pods, 0.0, deleting)


def test_timeline_measures_each_machine_and_phase() -> None:
    timeline = Timeline()
    timeline.begin("create", 0.0)
    assert [
        r.name for r in timeline.observe(0.5, [row("demo-1", "-", "x"), row("demo-2", "-", "x")])
    ] == [
        "demo-1",
        "demo-2",
    ]
    # Nothing but the pod count changed: no new line.
    assert timeline.observe(1.0, [row("demo-1", "-", "x", pods=3), row("demo-2", "-", "x")]) == []
    timeline.observe(4.5, [row("demo-1", "Running", "running"), row("demo-2", "Pending", "x")])
    timeline.observe(
        5.5, [row("demo-1", "Running", "running"), row("demo-2", "Running", "running")]
    )
    timeline.end(5.5)
    timeline.begin("scale-down", 10.0)
    assert timeline.phase == "scale-down"
    kept = row("demo-1", "Running", "running")
    for now, step in (
        (10.5, "get VM status"),
        (11, "drain"),
        (13, "drain (retrying)"),
        (17, "delete VM"),
    ):
        timeline.observe(now, [kept, row("demo-2", "Terminating", step, deleting=True)])
    assert timeline.gone(19.0, ["demo-1"]) == ["demo-2"]
    assert timeline.gone(20.0, ["demo-1"]) == []  # reported once
    timeline.end(20.0)
    gone = timeline.departed["demo-2"]
    assert (gone.phase, gone.step, gone.pods, gone.node) == ("-", "gone", 0, "demo-2")

    one, two = timeline.machines["demo-1"], timeline.machines["demo-2"]
    assert one.time_to_running == 4.0 and one.drain_time is None and one.deletion_time is None
    assert two.time_to_running == 5.0
    assert two.drain_time == 6.0  # 11 → 17: the retry is part of the drain
    assert two.deletion_time == 8.5  # deletion seen at 10.5, gone at 19
    assert two.gone_in == "scale-down"

    rows = summary_rows(timeline)
    assert [(r.name, r.outcome) for r in rows] == [("demo-1", "kept"), ("demo-2", "scaled down")]
    lines = summary_lines(timeline, rows, wall=21.0)
    assert lines == [
        "summary phase=create took=5.5s",
        "summary phase=scale-down took=10.0s",
        "summary machine=demo-1 to_running=4.0s in_place=- drain=- deletion=- outcome=kept",
        "summary machine=demo-2 to_running=5.0s in_place=- drain=6.0s deletion=8.5s "
        "outcome=scaled_down",
        "summary machines=2 running=2 updated_in_place=0 failed=0 deleted=1 "
        "mean_to_running=4.5s mean_drain=6.0s "
        "mean_deletion=8.5s wall=21.0s",
    ]


def test_outcomes_say_why_a_machine_went() -> None:
    timeline = Timeline()
    timeline.begin("rolling-update", 0.0)
    timeline.observe(1.0, [row("old", "Running", "running")])
    timeline.gone(2.0, [])
    timeline.end(2.0)
    timeline.begin("failure", 3.0)
    timeline.observe(3.0, [row("broken", "Unknown", "unhealthy")])
    timeline.observe(8.0, [row("broken", "Failed", "failed")])
    timeline.gone(9.0, [])
    timeline.end(10.0, failed_after=5.0)
    timeline.begin("workloads", 11.0)  # never finished
    outcomes = {r.name: r.outcome for r in summary_rows(timeline)}
    assert outcomes == {"old": "rolled", "broken": "failed, replaced"}
    lines = summary_lines(timeline, summary_rows(timeline), wall=12.0)
    assert "summary phase=failure took=7.0s failed_after=5.0s" in lines
    assert "summary phase=workloads took=-" in lines
    assert (
        "summary machine=broken to_running=- in_place=- drain=- deletion=- outcome=failed_replaced"
        in lines
    )
    assert lines[-1].startswith("summary machines=2 running=1 updated_in_place=0 failed=1 ")


def test_an_in_place_update_and_a_preserved_machine_are_recorded() -> None:
    """The in-place update's time runs from the machine's ``InPlaceUpdating`` to Running again;
    a machine seen failed and preserved before it went is said to be so."""
    timeline = Timeline()
    timeline.begin("in-place-update", 0.0)
    timeline.observe(1.0, [row("m", "Running", "running"), row("p", "Running", "running")])
    timeline.observe(2.0, [row("m", "InPlaceUpdating", "selected for update")])
    timeline.observe(3.5, [row("m", "InPlaceUpdateSuccessful", "updated in place")])
    timeline.observe(4.0, [row("m", "Running", "running")])
    timeline.end(4.0)
    timeline.begin("failure", 5.0)
    timeline.observe(6.0, [row("p", "Failed", "failed")])
    timeline.observe(6.5, [row("p", "Failed", "failed, preserved")])
    timeline.observe(9.0, [row("p", "Failed", "failed")])  # released
    timeline.gone(10.0, ["m"])
    timeline.end(10.0, failed_after=1.0, preserved_after=1.5)
    assert timeline.machines["m"].in_place_time == 2.0
    assert timeline.machines["p"].in_place_time is None
    outcomes = {r.name: r.outcome for r in summary_rows(timeline)}
    assert outcomes == {"m": "kept", "p": "failed, preserved, replaced"}
    lines = summary_lines(timeline, summary_rows(timeline), wall=10.0)
    assert "summary phase=failure took=5.0s failed_after=1.0s preserved_after=1.5s" in lines
    assert "summary machine=m to_running=0.0s in_place=2.0s drain=- deletion=- outcome=kept" in (
        lines
    )
    assert lines[-1].startswith("summary machines=2 running=2 updated_in_place=1 failed=1 ")


def test_drain_ending_with_the_machine_counts_until_gone() -> None:
    timeline = Timeline()
    timeline.observe(1.0, [row("m", "Terminating", "drain", deleting=True)])
    timeline.gone(4.0, [])
    assert timeline.machines["m"].drain_time == 3.0
    rows = summary_rows(timeline)
    assert rows[0].outcome == "deleted"


def test_unfinished_deletion_is_reported() -> None:
    timeline = Timeline()
    timeline.observe(1.5, [row("m", "Terminating", "drain", deleting=True)])
    assert summary_rows(timeline)[0].outcome == "deletion unfinished"


def machine_set(name: str, revision: str, cls: str, desired: int, current: int, ready: int) -> Any:
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "annotations": {"deployment.kubernetes.io/revision": revision},
            },
            "spec": {"replicas": desired, "template": {"spec": {"class": {"name": cls}}}},
            "status": {"replicas": current, "readyReplicas": ready},
        },
        MachineSet,
    )


def test_set_rows_in_revision_order_and_lines() -> None:
    rows = set_rows(
        [
            machine_set("demo-new", "10", "v2", 2, 1, 0),
            machine_set("demo-old", "9", "v1", 1, 2, 2),
        ]
    )
    assert rows == [
        SetRow("demo-old", "9", "v1", 1, 2, 2, False),
        SetRow("demo-new", "10", "v2", 2, 1, 0, False),
    ]
    assert set_line(3.0, rows[1]) == (
        "t=3.0s set=demo-new revision=10 class=v2 desired=2 current=1 ready=0"
    )
    assert set_gone_line(4.0, "demo-old") == "t=4.0s set=demo-old step=gone"
    text = render(set_table(rows, title="machine deployment demo"))
    assert "machine deployment demo" in text and "demo-new" in text and "v2" in text


def render(renderable: Any) -> str:
    console = Console(file=io.StringIO(), width=160, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_tables_render() -> None:
    rows = [
        MachineRow(
            "demo-1",
            "demo-abc",
            "Running",
            "running",
            "joined",
            "Successful",
            "demo-1",
            2,
            75.0,
            False,
        ),
        MachineRow(
            "demo-2",
            "demo-abc",
            "Terminating",
            "drain (retrying)",
            "Drain failed " * 20,
            "Failed",
            "demo-2",
            1,
            3.0,
            True,
        ),
    ]
    text = render(machine_table(rows, title="machines — scaling down", width=160))
    assert "machines — scaling down" in text
    assert "demo-1" in text and "1m15s" in text and "drain (retrying)" in text
    assert "…" in text  # a long last operation is cut, not wrapped over many lines
    assert max(len(line) for line in text.splitlines()) <= 160
    # A narrow terminal: every short column whole, the last operation left out.
    narrow = render(machine_table(rows, width=80))
    assert "last operation" not in narrow and "drain (retrying)" in narrow and "1m15s" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80
    timeline = Timeline()
    timeline.observe(0.0, [row("demo-1", "Running", "running")])
    summary = render(summary_table(summary_rows(timeline), wall=42.0))
    assert "42.0s wall time" in summary and "1/1 machines reached Running" in summary
    timeline.begin("scale-up", 1.0)
    timeline.end(3.5)
    phases = render(phase_table(timeline))
    assert "scale-up" in phases and "2.5s" in phases


def test_storage_rows() -> None:
    nodes = [
        StorageNode(id="b", name="demo-10", health="offline"),
        StorageNode(id="a", name="demo-2", health="online"),
        StorageNode(id="c", name="demo-3"),
    ]
    assert storage_rows(nodes) == [
        StorageRow("demo-2", "online"),
        StorageRow("demo-3", "-"),
        StorageRow("demo-10", "offline"),
    ]
    assert storage_line(3, StorageRow("demo-3", "offline")) == (
        "t=3.0s storage_node=demo-3 state=offline"
    )


def test_names_sort_as_people_read_them() -> None:
    names = ["demo-10", "demo-2", "demo-1", "other"]
    assert sorted(names, key=natural_key) == ["demo-1", "demo-2", "demo-10", "other"]


class GoneTerminal(io.StringIO):
    """A terminal that was closed under the demo: every write fails with EIO."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("live", [False, True])
def test_a_closed_terminal_ends_the_output_not_the_demo(live: bool) -> None:
    out = Output(live, GoneTerminal())
    out.line("t=1.0s demo=seeding")
    out.print(Text("summary"))
    assert out.gone
    out.line("t=2.0s demo=finished")  # no longer tried
