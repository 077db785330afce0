"""Jittered exponential backoff that forgives after a healthy period (client-go's reflector).

A reflector that keeps failing against a sick API server must slow down (0.8 s doubling to
30 s, with up to 100 % jitter so a fleet of clients does not retry in lockstep), but one that
failed once after hours of health must retry quickly: after ``reset_after`` seconds without a
failure the delay starts again from ``initial``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import trio


class Backoff:
    """Delays between a failing loop's attempts: exponential with jitter up to ``cap``, and
    forgiven (back to ``initial``) once the loop has run ``reset_after`` seconds without a
    failure, as client-go's reflector backs off its LIST and WATCH."""

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Callable[[], float] = trio.current_time,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock
        self._rng = rng or random.Random()
        self._base = 0.0
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """Seconds to wait after a failure now."""
        now = self._clock()
        if self._last_failure is None or now - self._last_failure > self.reset_after:
            self._base = self.initial
        else:
            self._base = min(self._base * self.factor, self.cap)
        self._last_failure = now
        return self._base + self._rng.random() * self.jitter * self._base

    def reset(self) -> None:
        """Forget past failures: the next one waits ``initial`` again (after a healthy run)."""
        self._last_failure = None

    async def wait(self) -> None:
        await trio.sleep(self.next_delay())
