"""Meltdown protection: at most one machine of a MachineDeployment is marked Failed at a time.

When a zone or the network fails, every machine turns Unknown together; replacing them all at
once would tear down a whole pool for a problem no new VM fixes. MCM lets one machine per
deployment (label ``name``) fail while others are being replaced; the rest wait.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio

from kubetrio.api.machine import PHASE_RUNNING, PHASE_TERMINATING, PHASE_UNKNOWN, Machine

MAX_REPLACEMENTS = 1
LOCK_TIMEOUT = 1.0


def replacements_in_progress(machines: Sequence[Machine]) -> int:
    """MCM's count: every machine neither Running nor Unknown is being replaced or created;
    a Terminating one counts twice (its replacement is on the way too)."""
    count = 0
    for machine in machines:
        if machine.phase not in (PHASE_RUNNING, PHASE_UNKNOWN):
            count += 2 if machine.phase == PHASE_TERMINATING else 1
    return count


class FailurePermits:
    """One lock per deployment, so two workers cannot both count "nobody is failing" and mark
    two machines. The holder keeps it until the cache shows its write."""

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}

    @asynccontextmanager
    async def hold(self, deployment: str) -> AsyncIterator[bool]:
        """Yields False when the lock could not be had within a second (MCM's permit wait)."""
        lock = self._locks.setdefault(deployment, trio.Lock())
        acquired = False
        with trio.move_on_after(LOCK_TIMEOUT):
            await lock.acquire()
            acquired = True
        try:
            yield acquired
        finally:
            if acquired:
                lock.release()
