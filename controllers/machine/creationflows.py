"""Which machines are in their creation flow right now, so a deletion that arrives during a
create call waits for it (the VM the call brings back is then deleted with the machine, not
left behind at the provider)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubetrio.runtime.controller.queue import ObjectKey


class CreationFlows:
    """The machines whose creation flow is running now (MCM's pending-creation map)."""

    def __init__(self) -> None:
        self._running: set[ObjectKey] = set()

    @contextmanager
    def running(self, key: ObjectKey) -> Iterator[None]:
        self._running.add(key)
        try:
            yield
        finally:
            self._running.discard(key)

    def __contains__(self, key: object) -> bool:
        return key in self._running
