"""The simulated world's reads and writes on an in-process emulator's store: each write is
committed before it returns, and the store's hook tells subscribers of every change."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator

from kubetrio.api.registry import KindInfo
from kubetrio.emulator.binding import bind
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store
from kubetrio.sim.cluster.objects import RESOURCES, Change, Obj, Objects, Subscriber

log = logging.getLogger("kubetrio.sim")


class StoreObjects(Objects):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self._types: dict[KindInfo, ResourceType] = {}

    def _rt(self, kind: KindInfo) -> ResourceType:
        rt = self._types.get(kind)
        if rt is None:
            rt = self.store.types.lookup(kind.group, kind.version, kind.plural)
            assert rt is not None, kind.plural
            self._types[kind] = rt
        return rt

    def now(self) -> dt.datetime:
        return self.store.clock.now()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        kinds = {self._rt(k).key: k for k in RESOURCES}

        def hook(rt: ResourceType, ev: WatchEvent) -> None:
            kind = kinds.get(rt.key)
            if kind is not None:
                prev = ev.prev.obj if ev.prev is not None else None
                subscriber(kind, Change(ev.type, ev.entry.obj, prev))

        return self.store.subscribe(hook)

    # -- reads

    def all(self, rt: KindInfo, ns: str | None = None) -> Iterator[Obj]:
        for entry in list(self.store.iter(self._rt(rt), ns)):
            yield entry.obj

    def get(self, rt: KindInfo, ns: str, name: str) -> Obj | None:
        entry = self.store.find(self._rt(rt), ns, name)
        return entry.obj if entry is not None else None

    # -- writes

    def create(self, rt: KindInfo, ns: str, obj: Obj) -> Obj | None:
        try:
            return self.store.create(self._rt(rt), ns if rt.namespaced else "", obj).obj
        except ApiError as exc:
            log.info("simulated create refused kind=%s err=%s", rt.kind, exc)
            return None

    def mutate(
        self, rt: KindInfo, obj: Obj, change: Callable[[Obj], None], status: bool = False
    ) -> Obj | None:
        md = obj["metadata"]
        ns = md.get("namespace", "")
        entry = self.store.find(self._rt(rt), ns, md["name"])
        if entry is None:
            return None
        new = entry.clone()
        change(new)
        try:
            return self.store.update(
                self._rt(rt), ns, md["name"], new, subresource="status" if status else ""
            ).obj
        except ApiError as exc:
            log.info("simulated update refused kind=%s name=%s err=%s", rt.kind, md["name"], exc)
            return None

    def delete(self, rt: KindInfo, obj: Obj, grace: int | None = None) -> None:
        md = obj["metadata"]
        try:
            self.store.delete(self._rt(rt), md.get("namespace", ""), md["name"], grace=grace)
        except ApiError as exc:
            if exc.code != 404:
                log.info(
                    "simulated delete refused kind=%s name=%s err=%s", rt.kind, md["name"], exc
                )

    def bind(self, pod: Obj, node: str) -> bool:
        md = pod["metadata"]
        try:
            bind(self.store, self._rt(self.pods), md.get("namespace", ""), md["name"], node)
        except ApiError as exc:
            log.info("simulated binding refused pod=%s err=%s", md["name"], exc)
            return False
        return True
