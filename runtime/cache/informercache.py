"""The shared informer cache: one informer per kind (and selector), however many consumers.

Two controllers watching Pods share one LIST+WATCH and one store. Informers asked for after the
cache started are started at once, so controllers can be registered in any order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import trio

from kubetrio.api.meta import KubeObject, kind_of
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client

T = TypeVar("T", bound=KubeObject)

InformerKey = tuple[type[KubeObject], str | None, str | None, str | None]


class InformerCache:
    """The shared informer cache of one cluster: at most one informer per (kind, namespace,
    selectors), however many controllers ask, so each object is listed, watched and stored
    once; started by the manager and synced before any controller runs."""

    def __init__(self, client: Client, *, resync_period: float | None = None) -> None:
        self.client = client
        self.resync_period = resync_period
        self._informers: dict[InformerKey, Informer[Any]] = {}
        self._nursery: trio.Nursery | None = None

    def informer(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[T], T] | None = None,
    ) -> Informer[T]:
        """The shared informer for this kind and selection, created on first request."""
        kind_of(kind)  # an undeclared class fails here, naming the fix
        key: InformerKey = (kind, namespace, label_selector, field_selector)
        existing = self._informers.get(key)
        if existing is not None:
            return cast(Informer[T], existing)
        informer = Informer(
            self.client,
            kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resync_period=self.resync_period,
            transform=transform,
        )
        self._informers[key] = informer
        if self._nursery is not None:
            self._nursery.start_soon(informer.run)
        return informer

    @property
    def informers(self) -> list[Informer[Any]]:
        return list(self._informers.values())

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self._informers.values())

    async def wait_for_sync(self) -> None:
        """Until every informer requested so far has listed once."""
        for informer in list(self._informers.values()):
            await informer.wait_for_sync()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every informer, present and future, until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for informer in self._informers.values():
                nursery.start_soon(informer.run)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None
