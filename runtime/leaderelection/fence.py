"""Fencing: leader-only side effects ask the elector, just before they happen, whether the
lease can still be proven held.

Leadership is a promise with an expiry: a process frozen (SIGSTOP, a VM pause, a long GC) may
wake up long after another replica took the lease over, with every task still believing it
leads. Checking a deadline on a monotonic clock at the last moment before each write is what
stops such a process from acting; an elector's renew loop alone cannot, since it may run only
after the woken tasks did.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


class NotLeader(Exception):
    """A leader-only action was refused: this process cannot prove it holds the lease.

    Not an ``ApiError``: the API server never said anything, and no caller should mistake
    it for an answer it can retry or record on an object.
    """


def always() -> bool:
    return True


def always_at(_now: float) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Fence:
    """The elector's answer to "may I still act?".

    ``holds`` reads the trio clock; ``holds_at`` is asked at an instant of ``time.monotonic()``,
    which keeps counting while the process is frozen whatever clock trio runs on (a test's
    MockClock does not), so it must use only that instant and plain attributes.
    """

    holds: Callable[[], bool]
    holds_at: Callable[[float], bool] = always_at
    lease: str = "the leader lease"

    def check(self, action: str) -> None:
        """Raise ``NotLeader`` unless the lease is proven held."""
        if not self.holds():
            raise NotLeader(f"{action}: refused, {self.lease} is not proven held")

    def last_check(self, action: str) -> int:
        """Right before a write's bytes leave: raise ``NotLeader`` unless the lease is proven
        held on both clocks; the instant checked, as ``time.monotonic_ns()``."""
        now = time.monotonic_ns()
        if not self.holds() or not self.holds_at(now / 1e9):
            raise NotLeader(f"{action}: refused, {self.lease} is not proven held")
        return now


def is_not_leader(error: BaseException) -> bool:
    """True for ``NotLeader``, or a group (nurseries nest them) holding only ``NotLeader``s."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_not_leader(inner) for inner in error.exceptions)
    return isinstance(error, NotLeader)
