"""A test's mock clock does not jump while a client request is in flight.

Tests run the manager and the emulator on trio's ``MockClock`` with a small autojump threshold:
when every task has been idle that long, simulated time jumps to the next deadline. A request
handed to a worker thread looks idle to trio, so on a loaded machine a slow round trip let the
clock jump mid-request — a VM booted and registered its Node before the create call that made
it had returned, and the controller decided on a world that had moved on. So a request in flight
holds the clock (its autojump threshold becomes infinite) until its answer is back.

A server in the same trio run may itself wait on simulated time while answering (an injected
latency, a scripted hang): it says so with ``waiting_on_simulated_time``, and while every
request in flight is such a wait, the clock may jump again. With the real clock (production),
both are no-ops.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from weakref import WeakKeyDictionary

import trio
import trio.testing


class _Hold:
    __slots__ = ("in_flight", "threshold", "waiting")

    def __init__(self, threshold: float) -> None:
        self.in_flight = 0  # requests sent and not yet answered
        self.waiting = 0  # of those, the ones a server is answering by sleeping on the clock
        self.threshold = threshold  # the clock's own threshold, restored when nothing is held


_holds: WeakKeyDictionary[trio.abc.Clock, _Hold] = WeakKeyDictionary()


def _update(in_flight: int, waiting: int) -> None:
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        return
    hold = _holds.get(clock)
    if hold is None:
        hold = _holds[clock] = _Hold(clock.autojump_threshold)
    was_held = hold.in_flight > hold.waiting
    hold.in_flight += in_flight
    hold.waiting += waiting
    held = hold.in_flight > hold.waiting
    if held and not was_held:
        hold.threshold = clock.autojump_threshold
        clock.autojump_threshold = math.inf
    elif was_held and not held:
        clock.autojump_threshold = hold.threshold


class _InFlight(AbstractContextManager[None]):
    """Stateless, so one instance serves every request (no generator per request)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _update(1, 0)

    def __exit__(self, *exc_info: object) -> None:
        _update(-1, 0)


_IN_FLIGHT = _InFlight()


def request_in_flight() -> AbstractContextManager[None]:
    """Around a request/response exchange (never a watch: that one is open for good)."""
    return _IN_FLIGHT


@contextmanager
def waiting_on_simulated_time() -> Iterator[None]:
    """Around a server's sleep on the clock while it answers a request."""
    _update(0, 1)
    try:
        yield
    finally:
        _update(0, -1)
