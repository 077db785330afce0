"""How a simulated controller runs: level-triggered passes, woken by store changes or by its
own deadlines.

A store hook only sets a flag (hooks run inside writes, so acting there would interleave one
controller's writes with another's half-done ones); the controller's task then reads the whole
current state and does what is due. Delays are deadlines the pass returns, so one sleep serves
every pending timer and everything runs on the emulator's trio clock.

A controller that also implements ``changed`` (``Tracking``) is handed each event in the hook,
to note which objects changed, so its pass can visit only those (deciding each exactly as a
whole-state pass would): a pass then costs what changed, not what exists.
"""

from __future__ import annotations

import logging
import math
from typing import Protocol, runtime_checkable

import trio

from kubetrio.api.registry import KindInfo
from kubetrio.sim.cluster.objects import Change

log = logging.getLogger("kubetrio.emulator.cluster")

# After a pass that raised: try again later rather than spin.
RETRY_AFTER_ERROR = 1.0


class Controller(Protocol):
    name: str
    # Resources (``KindInfo.group_resource``) whose changes may give this controller work.
    watches: frozenset[str]

    def reconcile(self, now: float) -> float | None:
        """Do what is due at ``now``; return when to run again regardless of changes."""
        ...


@runtime_checkable
class Tracking(Protocol):
    def changed(self, rt: KindInfo, ev: Change) -> None:
        """Note a committed change to a watched resource (runs inside the write: only note)."""
        ...


class Wakeup:
    """A resettable flag a synchronous hook can raise and a task can wait for."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        if self._event.is_set():
            self._event = trio.Event()

    async def wait(self) -> None:
        await self._event.wait()


async def run_controller(controller: Controller, wakeup: Wakeup) -> None:
    while True:
        wakeup.clear()
        now = trio.current_time()
        try:
            deadline = controller.reconcile(now)
        except Exception:
            log.exception("simulated controller pass failed controller=%s", controller.name)
            deadline = now + RETRY_AFTER_ERROR
        with trio.move_on_at(math.inf if deadline is None else deadline):
            await wakeup.wait()
        await trio.lowlevel.checkpoint()


class Deadlines:
    """The earliest of the deadlines a pass collects (None: nothing timed is pending)."""

    def __init__(self) -> None:
        self.next: float | None = None

    def add(self, at: float) -> None:
        if self.next is None or at < self.next:
            self.next = at
