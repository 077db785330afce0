"""A test's mock clock does not jump while a client request is in flight.

Tests run the manager and the emulator on trio's ``MockClock`` with a small autojump threshold:
when every task has been idle that long, simulated time jumps to the next deadline. A request
whose answer is on its way looks idle to trio, so on a loaded machine a slow round trip let the
clock jump mid-request — a VM booted and registered its Node before the create call that made
it had returned, and the controller decided on a world that had moved on. So a request in flight
(``kubetrio.runtime.util.inflight.request_in_flight``) holds the clock — its autojump threshold
becomes infinite — until its answer is back.

A server in the same trio run may itself wait on simulated time while answering (an injected
latency, a scripted hang): it marks that with ``waiting_on_simulated_time``, and while every
request in flight is such a wait, the clock may jump again. In a run on any other clock, the
hook returns at once.

The kit's pytest plugin installs ``hold_mock_clock`` for the whole session; code that runs the
kit outside pytest installs it with ``kubetrio.runtime.util.inflight.add_hook``.
"""

from __future__ import annotations

import math
from weakref import WeakKeyDictionary

import trio
import trio.testing

__all__ = ["hold_mock_clock"]


class _Hold:
    __slots__ = ("in_flight", "threshold", "waiting")

    def __init__(self, threshold: float) -> None:
        self.in_flight = 0  # requests sent and not yet answered
        self.waiting = 0  # of those, the ones a server is answering by sleeping on the clock
        self.threshold = threshold  # the clock's own threshold, restored when nothing is held


_holds: WeakKeyDictionary[trio.abc.Clock, _Hold] = WeakKeyDictionary()


def hold_mock_clock(requests: int, simulated_waits: int) -> None:
    """The ``InFlightHook`` that holds the current run's MockClock while a request is in flight
    that is not a server's wait on simulated time."""
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        return
    hold = _holds.get(clock)
    if hold is None:
        hold = _holds[clock] = _Hold(clock.autojump_threshold)
    was_held = hold.in_flight > hold.waiting
    hold.in_flight += requests
    hold.waiting += simulated_waits
    held = hold.in_flight > hold.waiting
    if held and not was_held:
        hold.threshold = clock.autojump_threshold
        clock.autojump_threshold = math.inf
    elif was_held and not held:
        clock.autojump_threshold = hold.threshold
