"""Emulator time: everything that schedules or ages runs on trio's clock, so a test's MockClock
drives watch timeouts, grace periods and fault latency.

Timestamps written into objects (deletionTimestamp, disruptedPods) come from
``kubetrio.runtime.util.clock``: the run's anchored wall-clock instant plus the trio time elapsed
since, so they advance with a MockClock, look like real RFC 3339 times, and agree with the
controllers' "now" when both share a run. Only creationTimestamp uses the plain wall clock.
"""

from __future__ import annotations

import datetime as dt
import functools
import time

import trio

from kubetrio.runtime.util.clock import now


def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except (TypeError, ValueError):
        return None


class EmuClock:
    """Must be created inside the trio run whose clock it follows."""

    def __init__(self) -> None:
        now()  # anchor this run's wall clock now, before anything asks

    def monotonic(self) -> float:
        return trio.current_time()

    def now(self) -> dt.datetime:
        return now()

    def now_rfc3339(self, plus_seconds: float = 0.0) -> str:
        return rfc3339(self.now() + dt.timedelta(seconds=plus_seconds))

    @staticmethod
    def wall_rfc3339() -> str:
        # Second resolution: formatted once per second, not once per create (a hot path).
        return _second_text(int(time.time()))


@functools.lru_cache(maxsize=2)
def _second_text(second: int) -> str:
    return rfc3339(dt.datetime.fromtimestamp(second, dt.UTC))
