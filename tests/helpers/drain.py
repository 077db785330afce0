"""A node drain against the emulator: the drainer with its caches, and the nodes it drains; the
drain tests and the machine deletion tests that race a drain share them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
from prometheus_client import CollectorRegistry

from kubetrio.api.core import PersistentVolume
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.drain import Drainer
from kubetrio.controllers.machine.drain.metrics import drain_metrics
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventSender


async def no_volumes(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
    return {}


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
    }


@asynccontextmanager
async def drainer(emu: Emulator) -> AsyncIterator[tuple[Drainer, CollectorRegistry]]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    cache = InformerCache(client)
    view = DrainCache.from_cache(cache)
    registry = CollectorRegistry()
    sender = EventSender(client)
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await nursery.start(sender.run)
        await cache.wait_for_sync()
        yield (
            Drainer(
                client,
                view,
                no_volumes,
                metrics=drain_metrics(registry),
                events=sender.recorder("kubetrio-drain"),
            ),
            registry,
        )
        nursery.cancel_scope.cancel()
