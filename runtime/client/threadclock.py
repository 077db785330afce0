"""trio's clock, read from the worker threads an exec credential plugin runs in.

A plugin's credential is looked up in a worker thread (its run may take seconds), where
``trio.current_time()`` is not available. Yet a cached token must age on the same clock as the
rest of the run: in a test, a MockClock expires the emulator's tokens, and the client must see
them expire at the same instant. So the run's clock object is captured once, on the trio side,
and read from the threads (a clock's ``current_time`` is a plain read, safe from any thread).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import trio

from kubetrio.runtime.util import clock as wall_clock


@dataclass(frozen=True, slots=True)
class ThreadClock:
    """``monotonic()`` for periods, ``wall()`` (Unix seconds) for expiry timestamps."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time

    @classmethod
    def capture(cls) -> ThreadClock:
        """The current trio run's clock; the system clocks when called outside a run."""
        try:
            run_clock = trio.lowlevel.current_clock()
        except RuntimeError:
            return cls()
        # The run's anchored wall clock (what the emulator stamps tokens with), advanced by
        # the run's clock from here.
        wall0, trio0 = wall_clock.now().timestamp(), run_clock.current_time()
        return cls(run_clock.current_time, lambda: wall0 + run_clock.current_time() - trio0)
