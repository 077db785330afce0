"""Wall-clock time that follows trio's clock.

Timestamps a controller writes and compares (a machine's last status change, a drain's start)
must advance with a test's MockClock, or a 20-minute timeout could never be reached without
waiting 20 minutes. The wall-clock instant is anchored once per trio run and advanced by trio's
clock from there; the emulator uses the same anchor, so in a test both agree on "now".
"""

from __future__ import annotations

import datetime as dt

import trio
from trio.lowlevel import RunVar

_ANCHOR: RunVar[tuple[dt.datetime, float]] = RunVar("kubetrio_wall_anchor")


def now() -> dt.datetime:
    """The current UTC time on this trio run's clock (call from inside a run)."""
    try:
        wall, trio0 = _ANCHOR.get()
    except LookupError:
        wall, trio0 = dt.datetime.now(dt.UTC), trio.current_time()
        _ANCHOR.set((wall, trio0))
    return wall + dt.timedelta(seconds=trio.current_time() - trio0)


def seconds_since(moment: dt.datetime | None) -> float | None:
    """Seconds from ``moment`` to now, or None when there is no moment."""
    return None if moment is None else (now() - moment).total_seconds()
