"""Waiting for the cache to show our own write before deciding again.

Every write to a deployment bumps its resourceVersion, and writes are conditional on the
version read. A pass that starts before the cache has the deployment it just wrote (a set's
status change enqueues it meanwhile) would compute from the old version and fail with a
conflict: a wasted request, and a retry. So the version each write returned is remembered
until the informer delivers it; a pass finding its deployment still behind is skipped — the
delivery enqueues it again. A version the cache never shows exactly (a relist jumped past
it) is forgotten after ``PATIENCE`` seconds.
"""

from __future__ import annotations

import trio

from kubetrio.api.machineset import MachineDeployment
from kubetrio.runtime.cache.informer import EventHandler

PATIENCE = 5.0


class OwnWrites:
    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, float]] = {}  # uid -> (version, give up at)

    def wrote(self, deployment: MachineDeployment) -> None:
        deadline = trio.current_time() + PATIENCE
        self._pending[deployment.metadata.uid] = (deployment.resource_version, deadline)

    def behind(self, deployment: MachineDeployment) -> bool:
        """The cache has not shown our last write of it yet."""
        pending = self._pending.get(deployment.metadata.uid)
        if pending is None:
            return False
        version, deadline = pending
        if deployment.resource_version == version or trio.current_time() >= deadline:
            del self._pending[deployment.metadata.uid]
            return False
        return True

    def handler(self) -> EventHandler[MachineDeployment]:
        def seen(deployment: MachineDeployment) -> None:
            pending = self._pending.get(deployment.metadata.uid)
            if pending is not None and pending[0] == deployment.resource_version:
                del self._pending[deployment.metadata.uid]

        return EventHandler(
            on_add=lambda d, _initial: seen(d), on_update=lambda _old, new: seen(new)
        )
