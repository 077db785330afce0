"""What the embedded demo shows while it runs: one row per MachineSet of the deployment (revision,
class, desired/current/ready machines), one row per machine (its set, phase, the step it is in,
its last operation, node, pods on the node, age) and the storage nodes, rendered either as a live
``rich`` table (a terminal) or as one plain ``key=value`` line per change (a pipe or a log file,
where redrawing a table would only produce noise).

Everything here is a pure function of the objects it is given, so the view is tested without a
cluster and the demo's own loop stays a thin "read the caches, render" step.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from kubetrio.api.core import Node, Pod
from kubetrio.api.machine import (
    CANDIDATE_FOR_UPDATE,
    DRAIN_SUCCESSFUL,
    NODE_IN_PLACE_UPDATE,
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_IN_PLACE_UPDATE_FAILED,
    PHASE_IN_PLACE_UPDATE_SUCCESSFUL,
    PHASE_IN_PLACE_UPDATING,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_TERMINATING,
    PHASE_UNKNOWN,
    READY_FOR_UPDATE,
    SELECTED_FOR_UPDATE,
    STATE_FAILED,
    UPDATE_FAILED,
    UPDATE_SUCCESSFUL,
    Machine,
)
from kubetrio.api.machineset import REVISION_ANNOTATION, MachineSet
from kubetrio.controllers.storage.backend import StorageNode

# MCM's lastOperation step markers of the deletion flow (matched by substring, as MCM does),
# latest step first: a description names the step that runs *next*, and some descriptions
# mention an earlier step in passing.
DELETION_STEPS: tuple[tuple[str, str], ...] = (
    ("Initiate machine object finalizer removal", "remove finalizer"),
    ("Initiate node object deletion", "delete node"),
    ("Initiate VM deletion", "delete VM"),
    ("Delete Volume Attachments", "delete volume attachments"),
    ("Initiate node drain", "drain"),
    ("Set machine status to termination. Now, getting VM Status", "get VM status"),
)
STEP_DRAIN = "drain"
STEP_GONE = "gone"
STEP_PRESERVED = "preserved"
STEP_UPDATED_IN_PLACE = "updated in place"
# The ``InPlaceUpdate`` condition's reasons, as the steps of an in-place update.
IN_PLACE_STEPS: Mapping[str, str] = {
    CANDIDATE_FOR_UPDATE: "candidate for update",
    SELECTED_FOR_UPDATE: "selected for update",
    DRAIN_SUCCESSFUL: "drained for update",
    READY_FOR_UPDATE: "updating in place",
    UPDATE_SUCCESSFUL: STEP_UPDATED_IN_PLACE,
    UPDATE_FAILED: "in-place update failed",
}

PHASE_STYLES: Mapping[str, str] = {
    PHASE_PENDING: "yellow",
    PHASE_RUNNING: "green",
    PHASE_TERMINATING: "magenta",
    PHASE_UNKNOWN: "red",
    PHASE_FAILED: "bold red",
    PHASE_CRASH_LOOP_BACK_OFF: "red",
    PHASE_IN_PLACE_UPDATING: "cyan",
    PHASE_IN_PLACE_UPDATE_SUCCESSFUL: "cyan",
    PHASE_IN_PLACE_UPDATE_FAILED: "bold red",
}


def natural_key(name: str) -> tuple[str | int, ...]:
    """Sort ``demo-2`` before ``demo-10``, as a person reads them."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def machine_node(machine: Machine) -> str:
    """The machine's node: the ``node`` label the controller sets, else the status field."""
    return machine.metadata.labels.get("node") or machine.status.node


def machine_step(machine: Machine, node: Node | None = None) -> str:
    """A short name for where the machine is in its lifecycle, from phase and lastOperation.

    Deletion steps come from MCM's description markers; creation from the phase and whether
    the VM's node has registered yet; an in-place update from the ``InPlaceUpdate`` condition
    MCM copies onto the machine. A step whose last attempt failed says it is retried.
    """
    operation = machine.status.last_operation
    phase = machine.phase
    preserved = bool(machine.status.current_status.preserve_expiry_time)
    if machine.deleting or phase == PHASE_TERMINATING:
        step = next(
            (label for marker, label in DELETION_STEPS if marker in operation.description),
            "deletion requested",
        )
        return f"{step} (retrying)" if operation.state == STATE_FAILED else step
    if phase == "":
        # MCM creates the VM, then labels the machine with its node, then sets Pending.
        return "creating VM" if machine_node(machine) else "waiting for controller"
    if phase == PHASE_PENDING:
        if node is None:
            return "booting VM"
        ready = node.condition("Ready")
        return "joining" if ready is None or ready.status != "True" else "node Ready"
    if phase == PHASE_IN_PLACE_UPDATE_SUCCESSFUL:
        return STEP_UPDATED_IN_PLACE
    if phase == PHASE_IN_PLACE_UPDATING:
        condition = machine.condition(NODE_IN_PLACE_UPDATE)
        reason = condition.reason if condition is not None else ""
        return IN_PLACE_STEPS.get(reason, "updating in place")
    if phase == PHASE_RUNNING:
        return f"running, {STEP_PRESERVED}" if preserved else "running"
    if phase == PHASE_CRASH_LOOP_BACK_OFF:
        code = f" ({operation.error_code})" if operation.error_code else ""
        return f"create failed{code}, retrying"
    if phase == PHASE_UNKNOWN:
        return "unhealthy"
    if phase == PHASE_FAILED:
        return f"failed, {STEP_PRESERVED}" if preserved else "failed"
    return phase.lower()


def machine_set_name(machine: Machine) -> str:
    """The MachineSet that controls the machine (its controller owner), or "" for none."""
    ref = machine.metadata.controller_ref()
    return ref.name if ref is not None and ref.kind == "MachineSet" else ""


@dataclass(frozen=True, slots=True)
class SetRow:
    name: str
    revision: str
    machine_class: str
    desired: int
    current: int
    ready: int
    deleting: bool

    def key(self) -> tuple[str, str, int, int, int, bool]:
        return (
            self.revision,
            self.machine_class,
            self.desired,
            self.current,
            self.ready,
            self.deleting,
        )


def set_rows(sets: Iterable[MachineSet]) -> list[SetRow]:
    """One row per set, newest revision last (the order a rollout reads in)."""
    rows = [
        SetRow(
            name=s.name,
            revision=s.metadata.annotations.get(REVISION_ANNOTATION, "-"),
            machine_class=s.spec.template.spec.class_.name or "-",
            desired=s.spec.replicas,
            current=s.status.replicas,
            ready=s.status.ready_replicas,
            deleting=s.deleting,
        )
        for s in sets
    ]
    return sorted(rows, key=lambda row: (natural_key(row.revision), row.name))


def set_table(rows: Sequence[SetRow], *, title: str = "machine sets") -> Table:
    table = Table(title=title, title_justify="left")
    for header in ("set", "revision", "class", "desired", "current", "ready"):
        numeric = header in ("revision", "desired", "current", "ready")
        table.add_column(header, justify="right" if numeric else "left", no_wrap=True)
    for row in rows:
        complete = row.desired == row.current == row.ready
        table.add_row(
            row.name,
            row.revision,
            row.machine_class,
            str(row.desired),
            str(row.current),
            Text(str(row.ready), style="green" if complete else "yellow"),
            style="dim" if row.deleting or (row.desired == 0 and row.current == 0) else None,
        )
    return table


def set_line(elapsed: float, row: SetRow) -> str:
    """One change of one set, as ``t=… set=… revision=… class=… desired=… current=… ready=…``."""
    fields = {
        "set": row.name,
        "revision": row.revision,
        "class": row.machine_class,
        "desired": str(row.desired),
        "current": str(row.current),
        "ready": str(row.ready),
    }
    text = " ".join(f"{key}={_quote(value)}" for key, value in fields.items())
    return f"t={elapsed:.1f}s {text}"


def set_gone_line(elapsed: float, name: str) -> str:
    return f"t={elapsed:.1f}s set={name} step={STEP_GONE}"


@dataclass(frozen=True, slots=True)
class MachineRow:
    name: str
    machine_set: str
    phase: str
    step: str
    operation: str
    operation_state: str
    node: str
    pods: int
    age: float | None  # seconds since the demo first saw it; None when unknown
    deleting: bool

    def key(self) -> tuple[str, str, str, str, str, bool]:
        """What a plain-output line reports a change of (pod counts and age are left out:
        they change too often to be worth a line each)."""
        return (self.machine_set, self.phase, self.step, self.node, self.operation, self.deleting)


def pods_per_node(pods: Iterable[Pod]) -> dict[str, int]:
    """Pods bound to each node and not on their way out."""
    counts: dict[str, int] = {}
    for pod in pods:
        node = pod.spec.node_name
        if node and not pod.deleting and pod.status.phase not in ("Succeeded", "Failed"):
            counts[node] = counts.get(node, 0) + 1
    return counts


def machine_rows(
    machines: Iterable[Machine],
    nodes: Mapping[str, Node],
    pods: Mapping[str, int],
    first_seen: Mapping[str, float],
    now: float,
) -> list[MachineRow]:
    """One row per machine, sorted by name."""
    rows = []
    for machine in sorted(machines, key=lambda m: natural_key(m.name)):
        node_name = machine_node(machine)
        # Before the controller labels the machine, the sim VM registers a node of its name.
        node = nodes.get(node_name or machine.name)
        seen = first_seen.get(machine.name)
        rows.append(
            MachineRow(
                name=machine.name,
                machine_set=machine_set_name(machine),
                phase=machine.phase or "-",
                step=machine_step(machine, node),
                operation=machine.status.last_operation.description,
                operation_state=machine.status.last_operation.state,
                node=node_name,
                pods=pods.get(node_name, 0) if node_name else 0,
                age=None if seen is None else max(0.0, now - seen),
                deleting=machine.deleting,
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class StorageRow:
    name: str
    state: str


def storage_rows(nodes: Iterable[StorageNode]) -> list[StorageRow]:
    """The storage service's nodes with their health as it words it, sorted by name."""
    rows = [StorageRow(node.name, node.health or "-") for node in nodes]
    return sorted(rows, key=lambda row: natural_key(row.name))


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def machine_table(
    rows: Sequence[MachineRow], *, title: str = "machines", width: int = 160
) -> Table:
    """The live table for a terminal ``width`` columns wide. The short columns keep their
    width; the last operation gets what is left (cut with an ellipsis, at most 80), and is left
    out on a terminal too narrow for it."""
    table = Table(title=title, title_justify="left", expand=False)
    headers = ("machine", "set", "phase", "step", "node", "pods", "age")
    cells = [
        (
            row.name,
            row.machine_set or "-",
            row.phase,
            row.step,
            row.node or "-",
            str(row.pods),
            format_age(row.age),
        )
        for row in rows
    ]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    for header, column_width in zip(headers, widths, strict=True):
        table.add_column(
            header,
            justify="right" if header in ("pods", "age") else "left",
            no_wrap=True,
            min_width=column_width,
        )
    # Each column costs its content, two spaces of padding and one border; plus the last border.
    room = min(80, width - sum(w + 3 for w in widths) - 3 - 1)
    with_operation = room >= 12
    if with_operation:
        longest = max([len("last operation"), *(len(row.operation) for row in rows)])
        table.add_column("last operation", no_wrap=True, min_width=min(room, longest))
    for row in rows:
        phase = Text(row.phase, style=PHASE_STYLES.get(row.phase, ""))
        step = Text(row.step, style="red" if "retrying" in row.step else "")
        operation = Text(
            _shorten(row.operation, room),
            style="red" if row.operation_state == STATE_FAILED else "dim",
        )
        table.add_row(
            row.name,
            row.machine_set or "-",
            phase,
            step,
            row.node or "-",
            str(row.pods),
            format_age(row.age),
            *([operation] if with_operation else []),
            style="dim" if row.step == STEP_GONE else None,
        )
    return table


def storage_table(rows: Sequence[StorageRow]) -> Table:
    table = Table(title="storage nodes", title_justify="left")
    table.add_column("node")
    table.add_column("state")
    for row in rows:
        table.add_row(row.name, row.state)
    return table


def _quote(value: str) -> str:
    """logfmt-style: bare when it has no spaces or quotes, double-quoted otherwise."""
    if value and not any(c in value for c in ' "=\\'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plain_line(elapsed: float, row: MachineRow) -> str:
    """One change of one machine, as ``t=… machine=… phase=… step=… node=… pods=… op=…``."""
    fields = {
        "machine": row.name,
        "set": row.machine_set or "-",
        "phase": row.phase,
        "step": row.step,
        "node": row.node or "-",
        "pods": str(row.pods),
    }
    text = " ".join(f"{key}={_quote(value)}" for key, value in fields.items())
    operation = f" op={_quote(row.operation)}" if row.operation else ""
    return f"t={elapsed:.1f}s {text}{operation}"


def gone_line(elapsed: float, name: str) -> str:
    return f"t={elapsed:.1f}s machine={name} phase=- step={STEP_GONE}"


def event_line(elapsed: float, message: str, **fields: object) -> str:
    """A scenario milestone (seeding, scale-down, …) in the same format as machine lines."""
    extra = "".join(f" {key}={_quote(str(value))}" for key, value in fields.items())
    return f"t={elapsed:.1f}s demo={_quote(message)}{extra}"


def storage_line(elapsed: float, row: StorageRow) -> str:
    return f"t={elapsed:.1f}s storage_node={row.name} state={_quote(row.state)}"


def kubectl_hint(kubeconfig: str) -> str:
    return (
        f"kubectl --kubeconfig {shlex.quote(kubeconfig)} "
        "get machinedeployments,machinesets,machines,nodes,pods -o wide"
    )
