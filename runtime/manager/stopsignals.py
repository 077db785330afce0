"""SIGTERM and SIGINT for a manager run from a user's own script, as ``kubetrio run`` has them.

Kubernetes stops a pod with SIGTERM and a person at a terminal with Ctrl-C; either should let
in-flight reconciles finish (``Manager.stop``), and a second one should not be ignored when
someone is in a hurry. A manager only takes the signals nobody else has claimed: a signal
whose handler is still Python's default. So ``kubetrio run`` (which receives them itself), an
application with its own handlers, and a second manager in the same process keep theirs.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence

import trio

from kubetrio.runtime.util.log import get_logger

__all__ = ["STOP_SIGNALS", "stop_on_signals", "unclaimed"]

log = get_logger("kubetrio.manager")

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)

_DEFAULTS = {signal.SIG_DFL, signal.default_int_handler}


def unclaimed(signals: Sequence[signal.Signals] = STOP_SIGNALS) -> tuple[signal.Signals, ...]:
    """The ``signals`` still on the default handler (Python's, or trio's for SIGINT); none
    outside the main thread, where handlers cannot be installed."""
    if threading.current_thread() is not threading.main_thread():
        return ()
    return tuple(s for s in signals if _is_default(signal.getsignal(s)))


def _is_default(handler: object) -> bool:
    # Inside trio.run, SIGINT's default is trio's handler that raises KeyboardInterrupt at
    # the next checkpoint (trio only installs it over Python's own default).
    return handler in _DEFAULTS or getattr(handler, "__module__", None) == "trio._core._ki"


async def stop_on_signals(
    signals: Sequence[signal.Signals],
    stop: Callable[[], None],
    abort: Callable[[], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Until cancelled: the first of ``signals`` calls ``stop``, another one ``abort``.
    ``started`` once they are received here (before, the default handlers act)."""
    with trio.open_signal_receiver(*signals) as received:
        task_status.started()
        stopping = False
        async for signum in received:
            name = signal.Signals(signum).name
            if stopping:
                log.warning("second signal, exiting now", signal=name)
                abort()
                return
            log.info("signal received, stopping", signal=name)
            stopping = True
            stop()
