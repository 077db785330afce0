"""``run_manager``: your controllers on a manager against the test's emulator.

The same ``setup(manager, config)`` functions ``kubetrio run --controllers`` loads register
the controllers; the manager runs in the test's trio run (on its mock clock) and the block
starts once every cache has synced, so the test's first write is seen::

    async with run_manager(emulator, greetings.setup, workers={"greeting": 2}) as manager:
        ...  # create objects, then wait_for / eventually

Leaving the block stops the manager gracefully (in-flight reconciles finish). A controller that
crashes ends the block at once with its own exception, so the test fails with the real cause
instead of waiting out a timeout. Metrics and probe servers are off unless asked for
(``metrics_bind_address="127.0.0.1:0"`` serves them on a free port).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.testing.servers import ApiServer, admin_client
from kubetrio.testing.waiting import running_managers

if TYPE_CHECKING:
    from kubetrio.emulator import Emulator

Setup = Callable[[Manager, Any], object]


def _sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception in a nursery's group that is not a cancellation, if there is one."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop()
        if isinstance(error, BaseExceptionGroup):
            pending.extend(error.exceptions)
        elif not isinstance(error, trio.Cancelled):
            leaves.append(error)
    return leaves[0] if len(leaves) == 1 else None


@asynccontextmanager
async def run_manager(
    emulator: Emulator | ApiServer,
    *setups: Setup,
    config: Any = None,
    client: Client | None = None,
    **manager_options: Any,
) -> AsyncIterator[Manager]:
    """A running manager with ``setups`` registered, as admin on ``emulator`` (or an
    ``api_server``; or through ``client``); ``manager_options`` go to ``Manager``."""
    if client is None:
        client = admin_client(emulator)
    manager_options.setdefault("metrics_bind_address", "0")
    manager_options.setdefault("health_probe_bind_address", "0")
    manager = Manager(client, **manager_options)
    for setup in setups:
        setup(manager, config)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(manager.run, handle_signals=False))
            token = running_managers.set((*running_managers.get(), manager))
            try:
                yield manager
            finally:
                running_managers.reset(token)
                manager.stop()
    except BaseExceptionGroup as group:
        # A crash (or the test's own failure) surfaces as itself, not wrapped in a group.
        error = _sole_error(group)
        if error is None:
            raise
        raise error from None
