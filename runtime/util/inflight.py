"""Marks around waits that trio cannot see as work: a request in flight, and a server's wait on
simulated time while it answers one.

While a request's answer is on its way (or an exec plugin runs in a worker thread), every task
looks idle to trio. Whatever advances time on idleness — a test's autojumping ``MockClock`` —
would then jump mid-request. So the code making such a wait marks it here, and what to do about
it is a hook's business: ``kubetrio.testing`` installs the one that holds a MockClock. Code that
answers a request by sleeping on the clock (an injected latency, a scripted hang) marks that
too, so a hook can tell a wait on simulated time from one on the network.

With no hook installed (production), a mark is one call returning a shared object whose enter
and exit do nothing: no clock lookup, no allocation.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

__all__ = [
    "InFlightHook",
    "add_hook",
    "remove_hook",
    "request_in_flight",
    "waiting_on_simulated_time",
]


class InFlightHook(Protocol):
    """What ``add_hook`` takes: told of every request and simulated wait as it begins and
    ends (``kubetrio.testing.clockhold.hold_mock_clock`` is one)."""

    def __call__(self, requests: int, simulated_waits: int) -> None:
        """Called in the trio thread: +1 when a request or a simulated wait begins, -1 when it
        ends (the other count 0)."""


class _Unmarked(AbstractContextManager[None]):
    """What a mark is while no hook is installed."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


class _Marked(AbstractContextManager[None]):
    """One mark while hooks are installed: the hooks seen on entry are the ones told of the end,
    so installing or removing one meanwhile never unbalances its counts."""

    __slots__ = ("_hooks", "_requests", "_waits")

    def __init__(self, requests: int, waits: int) -> None:
        self._requests = requests
        self._waits = waits
        self._hooks: tuple[InFlightHook, ...] = ()

    def __enter__(self) -> None:
        self._hooks = _hooks
        for hook in self._hooks:
            hook(self._requests, self._waits)

    def __exit__(self, *exc_info: object) -> None:
        for hook in self._hooks:
            hook(-self._requests, -self._waits)


_UNMARKED = _Unmarked()
_hooks: tuple[InFlightHook, ...] = ()


def request_in_flight() -> AbstractContextManager[None]:
    """Around a request/response exchange (never a watch's open stream: that one waits for
    good)."""
    return _Marked(1, 0) if _hooks else _UNMARKED


def waiting_on_simulated_time() -> AbstractContextManager[None]:
    """Around a server's sleep on the clock while it answers a request."""
    return _Marked(0, 1) if _hooks else _UNMARKED


def add_hook(hook: InFlightHook) -> None:
    """Tell ``hook`` of every mark from now on."""
    global _hooks
    _hooks = (*_hooks, hook)


def remove_hook(hook: InFlightHook) -> None:
    global _hooks
    _hooks = tuple(h for h in _hooks if h is not hook)
