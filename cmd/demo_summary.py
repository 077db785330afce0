"""The demo's record of each machine's milestones, as the demo saw them happen, and the summary it
prints at the end: per machine how long it took from creation to Running and, for the machines
scaled down, how long the drain and the whole deletion took.

Times are the demo's own clock readings when a change reached its caches (event-driven, so they
are as precise as the watch), not the objects' second-resolution timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from rich.table import Table

from kubetrio.api.machine import PHASE_RUNNING
from kubetrio.cmd.demo_view import STEP_DRAIN, STEP_GONE, MachineRow, natural_key


@dataclass(slots=True)
class MachineTimes:
    """Milestones of one machine, seconds on the demo's clock; None until they happen."""

    created: float
    running: float | None = None
    delete_requested: float | None = None
    drain_started: float | None = None
    drain_finished: float | None = None
    gone: float | None = None

    @property
    def time_to_running(self) -> float | None:
        return None if self.running is None else self.running - self.created

    @property
    def drain_time(self) -> float | None:
        if self.drain_started is None:
            return None
        end = self.drain_finished if self.drain_finished is not None else self.gone
        return None if end is None else end - self.drain_started

    @property
    def deletion_time(self) -> float | None:
        if self.delete_requested is None or self.gone is None:
            return None
        return self.gone - self.delete_requested


class Timeline:
    """Milestones per machine, fed with the rows the live view renders.

    ``observe`` returns the rows that changed since the previous observation, which is exactly
    what the plain output prints.
    """

    def __init__(self) -> None:
        self.machines: dict[str, MachineTimes] = {}
        self._last: dict[str, MachineRow] = {}
        # The last row of each machine that went, marked gone: the table keeps showing it.
        self.departed: dict[str, MachineRow] = {}

    def first_seen(self) -> dict[str, float]:
        return {name: times.created for name, times in self.machines.items()}

    def created(self, name: str, now: float) -> None:
        """The demo created ``name`` at ``now`` (earlier than its first observation)."""
        self.machines.setdefault(name, MachineTimes(created=now))

    def delete_requested(self, name: str, now: float) -> None:
        times = self.machines.get(name)
        if times is not None and times.delete_requested is None:
            times.delete_requested = now

    def observe(self, now: float, rows: Iterable[MachineRow]) -> list[MachineRow]:
        changed = []
        for row in rows:
            self.departed.pop(row.name, None)  # back under the same name
            times = self.machines.setdefault(row.name, MachineTimes(created=now))
            if row.phase == PHASE_RUNNING and times.running is None:
                times.running = now
            if row.deleting and times.delete_requested is None:
                times.delete_requested = now
            in_drain = row.step.startswith(STEP_DRAIN)
            if in_drain and times.drain_started is None:
                times.drain_started = now
            if (
                not in_drain
                and row.deleting
                and times.drain_started is not None
                and times.drain_finished is None
            ):
                times.drain_finished = now
            previous = self._last.get(row.name)
            if previous is None or previous.key() != row.key():
                changed.append(row)
            self._last[row.name] = row
        return changed

    def present(self, name: str) -> bool:
        """Whether ``name`` was there at the last observation."""
        return name in self._last

    def gone(self, now: float, present: Iterable[str]) -> list[str]:
        """Machines observed before and no longer present: mark them gone, return their names."""
        still = set(present)
        vanished = [name for name in self._last if name not in still]
        for name in vanished:
            last = self._last.pop(name)
            self.departed[name] = replace(last, phase="-", step=STEP_GONE, pods=0, deleting=False)
            times = self.machines.get(name)
            if times is not None and times.gone is None:
                times.gone = now
                if times.drain_started is not None and times.drain_finished is None:
                    times.drain_finished = now
        return sorted(vanished, key=natural_key)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    name: str
    to_running: float | None
    drain: float | None
    deletion: float | None
    outcome: str


def summary_rows(timeline: Timeline, deleted: Sequence[str]) -> list[SummaryRow]:
    rows = []
    for name in sorted(timeline.machines, key=natural_key):
        times = timeline.machines[name]
        if times.gone is not None:
            outcome = "deleted" if name in deleted else "gone"
        elif times.delete_requested is not None:
            outcome = "deletion unfinished"
        else:
            outcome = "kept" if name not in deleted else "not deleted"
        rows.append(
            SummaryRow(name, times.time_to_running, times.drain_time, times.deletion_time, outcome)
        )
    return rows


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summary_totals(rows: Sequence[SummaryRow], wall: float) -> dict[str, str]:
    return {
        "machines": str(len(rows)),
        "running": str(sum(1 for r in rows if r.to_running is not None)),
        "deleted": str(sum(1 for r in rows if r.outcome == "deleted")),
        "mean_to_running": _seconds(_mean(r.to_running for r in rows)),
        "mean_drain": _seconds(_mean(r.drain for r in rows)),
        "mean_deletion": _seconds(_mean(r.deletion for r in rows)),
        "wall": _seconds(wall),
    }


def summary_lines(rows: Sequence[SummaryRow], wall: float) -> list[str]:
    """The plain summary: one ``summary machine=…`` line per machine and a totals line."""
    lines = [
        f"summary machine={r.name} to_running={_seconds(r.to_running)} "
        f"drain={_seconds(r.drain)} deletion={_seconds(r.deletion)} "
        f"outcome={r.outcome.replace(' ', '_')}"
        for r in rows
    ]
    totals = summary_totals(rows, wall)
    lines.append("summary " + " ".join(f"{k}={v}" for k, v in totals.items()))
    return lines


def summary_table(rows: Sequence[SummaryRow], wall: float) -> Table:
    totals = summary_totals(rows, wall)
    table = Table(
        title=f"summary — {totals['wall']} wall time",
        title_justify="left",
        caption=(
            f"{totals['running']}/{totals['machines']} machines reached Running "
            f"(mean {totals['mean_to_running']}); {totals['deleted']} deleted "
            f"(mean drain {totals['mean_drain']}, mean deletion {totals['mean_deletion']})"
        ),
        caption_justify="left",
    )
    table.add_column("machine")
    for column in ("created → Running", "drain", "deletion"):
        table.add_column(column, justify="right")
    table.add_column("outcome")
    for r in rows:
        table.add_row(
            r.name,
            _seconds(r.to_running),
            _seconds(r.drain),
            _seconds(r.deletion),
            r.outcome,
        )
    return table
