"""Waiting for an informer's cache to show something, without polling and without losing a wake-up.

Code that waits for the cluster to reach a state (a drain waiting for pods to leave, a test
waiting for a controller to have acted) should neither sleep-and-look (slow or flaky) nor poll
the API server (load, and still a guess). It should re-check its condition against the
informer's cache each time the informer applies a change. MCM's drain did poll every 5 s, and fed
VolumeAttachment events to waiters through 20-slot buffers that dropped events when full, so a
re-attachment could be missed and the drain sat out its timeout. Here nothing is buffered, so
nothing can be dropped: a flood of unrelated events costs cheap re-checks, never a missed one.

``InformerChanges.of(informer)`` is the informer's one notifier, shared by everyone who waits on
it: informers cannot drop a handler, so the notifier adds exactly one and waiters come and go in
it — however many waits run, the informer's handler list does not grow. With nobody waiting, a
change costs the informer one call that tests an empty set (the informer calls it on every
event, tens of thousands a second under load)::

    pods = InformerChanges.of(cache.informer(Pod))
    gone = await pods.wait_until(lambda: not lister.by_index("node", name), deadline)
    await pods.next_change()  # whatever it is

Waiting on several informers at once (re-check when any of them changed) uses ``any_change``.
Its event is registered on entry, so checking inside the block and then waiting cannot miss a
change applied between the check and the wait, even when the check itself awaits::

    with any_change([machines, nodes]) as changed:
        if not await ready():
            await changed.wait()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

import trio

from kubetrio.runtime.cache.informer import EventHandler, Informer


class InformerChanges:
    """Sets each registered waiter's event at the informer's next change. Get it with ``of``:
    constructing one directly would add another handler to the informer."""

    __slots__ = ("__weakref__", "_waiters")

    def __init__(self) -> None:
        # Swapped for a fresh set on each wake: a waiter is woken once per registration, and
        # the changes that follow cost nothing until it has re-checked and registered again.
        self._waiters: set[trio.Event] = set()

    @classmethod
    def of(cls, informer: Informer[Any]) -> InformerChanges:
        """The informer's notifier; the first call subscribes it to the informer."""
        changes = _shared.get(informer)
        if changes is None:
            changes = _shared[informer] = cls()
            informer.add_handler(
                EventHandler(
                    on_add=changes._on_add,
                    on_update=changes._on_update,
                    on_delete=changes._on_delete,
                )
            )
        return changes

    @property
    def waiting(self) -> int:
        """How many waits are registered now (a wait that ended, however, is no longer)."""
        return len(self._waiters)

    # The informer calls these on every event: with no waiter they only test an empty set.

    def _on_add(self, obj: object, initial: bool) -> None:
        if self._waiters:
            self._wake()

    def _on_update(self, old: object, new: object) -> None:
        if self._waiters:
            self._wake()

    def _on_delete(self, obj: object) -> None:
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for event in waiters:
            event.set()

    async def wait_until(self, condition: Callable[[], bool], deadline: float) -> bool:
        """True once ``condition()`` holds, re-checked after each change; False if ``deadline``
        (trio clock) came first and it still does not hold then."""
        with trio.move_on_at(deadline):
            while True:
                with any_change((self,)) as changed:
                    if condition():
                        return True
                    await changed.wait()
        return condition()

    async def next_change(self) -> None:
        """Returns after the informer's next change (whatever it is)."""
        with any_change((self,)) as changed:
            await changed.wait()


# One notifier per informer, for as long as the informer lives.
_shared: WeakKeyDictionary[Informer[Any], InformerChanges] = WeakKeyDictionary()


@contextmanager
def any_change(notifiers: Iterable[InformerChanges]) -> Iterator[trio.Event]:
    """An event set by the first change any of ``notifiers``' informers applies after entry;
    leaving the block unregisters it (a waiter that gave up leaves nothing behind)."""
    changed = trio.Event()
    watched = tuple(notifiers)
    for changes in watched:
        changes._waiters.add(changed)
    try:
        yield changed
    finally:
        for changes in watched:
            changes._waiters.discard(changed)
