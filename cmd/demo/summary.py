"""The demo's record of each machine's milestones and of the scenario's phases, as the demo saw
them happen, and the summary it prints at the end: how long each phase took (create, scale up,
rolling update, in-place update, failure with preservation and replacement, workloads, scale
down), and per machine how long it took from creation to Running, how long its in-place update
took and, for the machines that went, how long the drain and the whole deletion took and why
they went.

Times are the demo's own clock readings when a change reached its caches (event-driven, so they
are as precise as the watch), not the objects' second-resolution timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from rich.table import Table

from kubetrio.api.machine import (
    PHASE_FAILED,
    PHASE_IN_PLACE_UPDATING,
    PHASE_RUNNING,
)
from kubetrio.cmd.demo.view import (
    STEP_DRAIN,
    STEP_GONE,
    STEP_PRESERVED,
    MachineRow,
    natural_key,
)


@dataclass(slots=True)
class MachineTimes:
    """Milestones of one machine, seconds on the demo's clock; None until they happen."""

    created: float
    running: float | None = None
    failed: float | None = None
    preserved: float | None = None
    in_place_started: float | None = None
    in_place_finished: float | None = None
    delete_requested: float | None = None
    drain_started: float | None = None
    drain_finished: float | None = None
    gone: float | None = None
    gone_in: str = ""  # the scenario phase during which it went

    @property
    def time_to_running(self) -> float | None:
        return None if self.running is None else self.running - self.created

    @property
    def in_place_time(self) -> float | None:
        """From the machine's update starting to it being Running again, in its new set."""
        if self.in_place_started is None or self.in_place_finished is None:
            return None
        return self.in_place_finished - self.in_place_started

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


@dataclass(slots=True)
class PhaseTimes:
    """One phase of the scenario: when the demo asked for it and when it saw it done, plus
    figures particular to it (seconds, by name)."""

    name: str
    started: float
    finished: float | None = None
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float | None:
        return None if self.finished is None else self.finished - self.started


class Timeline:
    """Milestones per machine, fed with the rows the live view renders, and the phases.

    ``observe`` returns the rows that changed since the previous observation, which is exactly
    what the plain output prints.
    """

    def __init__(self) -> None:
        self.machines: dict[str, MachineTimes] = {}
        self.phases: list[PhaseTimes] = []
        self._last: dict[str, MachineRow] = {}
        # The last row of each machine that went, marked gone: the table keeps showing it.
        self.departed: dict[str, MachineRow] = {}

    def first_seen(self) -> dict[str, float]:
        return {name: times.created for name, times in self.machines.items()}

    @property
    def phase(self) -> str:
        """The phase in progress (the last begun), "" before the first."""
        return self.phases[-1].name if self.phases else ""

    def begin(self, name: str, now: float) -> PhaseTimes:
        phase = PhaseTimes(name, now)
        self.phases.append(phase)
        return phase

    def end(self, now: float, **figures: float) -> None:
        """The phase in progress is done; ``figures`` are its particular times."""
        if self.phases and self.phases[-1].finished is None:
            self.phases[-1].finished = now
            self.phases[-1].figures.update(figures)

    def observe(self, now: float, rows: Iterable[MachineRow]) -> list[MachineRow]:
        changed = []
        for row in rows:
            self.departed.pop(row.name, None)  # back under the same name
            times = self.machines.setdefault(row.name, MachineTimes(created=now))
            if row.phase == PHASE_RUNNING and times.running is None:
                times.running = now
            if row.phase == PHASE_FAILED and times.failed is None:
                times.failed = now
            if row.step.endswith(STEP_PRESERVED) and times.preserved is None:
                times.preserved = now
            if row.phase == PHASE_IN_PLACE_UPDATING and times.in_place_started is None:
                times.in_place_started = now
            if (
                row.phase == PHASE_RUNNING
                and times.in_place_started is not None
                and times.in_place_finished is None
            ):
                times.in_place_finished = now
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
                times.gone_in = self.phase
                if times.drain_started is not None and times.drain_finished is None:
                    times.drain_finished = now
        return sorted(vanished, key=natural_key)


# Why a machine went, by the phase it went in.
OUTCOMES = {"rolling-update": "rolled", "scale-down": "scaled down"}


@dataclass(frozen=True, slots=True)
class SummaryRow:
    name: str
    to_running: float | None
    in_place: float | None
    drain: float | None
    deletion: float | None
    outcome: str


def outcome(times: MachineTimes) -> str:
    if times.gone is None:
        return "deletion unfinished" if times.delete_requested is not None else "kept"
    if times.failed is not None:
        return "failed, preserved, replaced" if times.preserved is not None else "failed, replaced"
    return OUTCOMES.get(times.gone_in, "deleted")


def summary_rows(timeline: Timeline) -> list[SummaryRow]:
    rows = []
    for name in sorted(timeline.machines, key=natural_key):
        times = timeline.machines[name]
        rows.append(
            SummaryRow(
                name,
                times.time_to_running,
                times.in_place_time,
                times.drain_time,
                times.deletion_time,
                outcome(times),
            )
        )
    return rows


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _word(text: str) -> str:
    """A value for a plain ``key=value`` line: no spaces, no commas."""
    return text.replace(",", "").replace(" ", "_")


def summary_totals(rows: Sequence[SummaryRow], wall: float) -> dict[str, str]:
    return {
        "machines": str(len(rows)),
        "running": str(sum(1 for r in rows if r.to_running is not None)),
        "updated_in_place": str(sum(1 for r in rows if r.in_place is not None)),
        "failed": str(sum(1 for r in rows if r.outcome.startswith("failed"))),
        "deleted": str(sum(1 for r in rows if r.deletion is not None)),
        "mean_to_running": _seconds(_mean(r.to_running for r in rows)),
        "mean_drain": _seconds(_mean(r.drain for r in rows)),
        "mean_deletion": _seconds(_mean(r.deletion for r in rows)),
        "wall": _seconds(wall),
    }


def phase_figures(phase: PhaseTimes) -> str:
    return " ".join(f"{key}={_seconds(value)}" for key, value in phase.figures.items())


def summary_lines(timeline: Timeline, rows: Sequence[SummaryRow], wall: float) -> list[str]:
    """The plain summary: one ``summary phase=…`` line per phase, one ``summary machine=…``
    line per machine and a totals line."""
    lines = []
    for phase in timeline.phases:
        figures = phase_figures(phase)
        lines.append(
            f"summary phase={_word(phase.name)} took={_seconds(phase.seconds)}"
            + (f" {figures}" if figures else "")
        )
    lines.extend(
        f"summary machine={r.name} to_running={_seconds(r.to_running)} "
        f"in_place={_seconds(r.in_place)} drain={_seconds(r.drain)} "
        f"deletion={_seconds(r.deletion)} outcome={_word(r.outcome)}"
        for r in rows
    )
    totals = summary_totals(rows, wall)
    lines.append("summary " + " ".join(f"{k}={v}" for k, v in totals.items()))
    return lines


def phase_table(timeline: Timeline) -> Table:
    table = Table(title="phases", title_justify="left")
    table.add_column("phase")
    table.add_column("took", justify="right")
    table.add_column("details")
    for phase in timeline.phases:
        table.add_row(phase.name, _seconds(phase.seconds), phase_figures(phase) or "-")
    return table


def summary_table(rows: Sequence[SummaryRow], wall: float) -> Table:
    totals = summary_totals(rows, wall)
    table = Table(
        title=f"summary — {totals['wall']} wall time",
        title_justify="left",
        caption=(
            f"{totals['running']}/{totals['machines']} machines reached Running "
            f"(mean {totals['mean_to_running']}); {totals['updated_in_place']} updated in "
            f"place; {totals['deleted']} deleted "
            f"(mean drain {totals['mean_drain']}, mean deletion {totals['mean_deletion']})"
        ),
        caption_justify="left",
    )
    table.add_column("machine")
    for column in ("created → Running", "in place", "drain", "deletion"):
        table.add_column(column, justify="right")
    table.add_column("outcome")
    for r in rows:
        table.add_row(
            r.name,
            _seconds(r.to_running),
            _seconds(r.in_place),
            _seconds(r.drain),
            _seconds(r.deletion),
            r.outcome,
        )
    return table
