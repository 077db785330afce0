"""Emulator time: everything that schedules or ages runs on trio's clock, so a test's MockClock
drives watch timeouts, grace periods and fault latency.

Timestamps written into objects (deletionTimestamp, disruptedPods) are the wall-clock instant at
which the clock was anchored plus the trio time elapsed since, so they advance with a MockClock
and still look like real RFC 3339 times. Only creationTimestamp uses the plain wall clock.
"""

from __future__ import annotations

import datetime as dt

import trio


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
        self._wall0 = dt.datetime.now(dt.UTC)
        self._trio0 = trio.current_time()

    def monotonic(self) -> float:
        return trio.current_time()

    def now(self) -> dt.datetime:
        return self._wall0 + dt.timedelta(seconds=trio.current_time() - self._trio0)

    def now_rfc3339(self, plus_seconds: float = 0.0) -> str:
        return rfc3339(self.now() + dt.timedelta(seconds=plus_seconds))

    @staticmethod
    def wall_rfc3339() -> str:
        return rfc3339(dt.datetime.now(dt.UTC))
