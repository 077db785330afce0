"""A watch keeps delivering while a controller's workers drain a deep queue.

Workers hand themselves ready keys without a schedule point per key (that is most of the
in-process speed), so this pins the other half of the bargain: the emulator (served in this very
trio run), kubectl's request and the informer's watch all make progress before the queue is
empty.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import trio

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Controller, Result
from tests.helpers.kube import Kubectl

pytestmark = pytest.mark.kubectl

DEEP = 300_000


class Busy:
    """A no-op reconciler that never yields, the worst case for everyone else."""

    def __init__(self) -> None:
        self.calls = 0

    async def reconcile(self, key: int) -> Result:
        self.calls += 1
        return Result()


async def test_watch_event_arrives_while_workers_drain_a_deep_queue(
    emu: Emulator, kubectl: Kubectl
) -> None:
    reconciler = Busy()
    controller: Controller[int] = Controller("fairness", reconciler, workers=2)
    seen_at: dict[str, int] = {}  # ConfigMap name -> reconciles done when its event arrived
    arrived = trio.Event()

    def on_add(obj: Any, initial: bool) -> None:
        seen_at[obj.metadata.name] = reconciler.calls
        arrived.set()

    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), ConfigMap)
    informer.add_handler(EventHandler(on_add=on_add))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        await informer.wait_for_sync()
        # kubectl is spawned before the workers start: spawning runs Popen in a thread, whose
        # GIL hand-offs against busy workers would measure the interpreter, not the framework.
        # Everything kubectl then does (start, discovery, the POST) overlaps the drain.
        create = [kubectl.binary, "create", "configmap", "while-busy", "--from-literal=a=b"]
        process = await trio.lowlevel.open_process(
            create, env=kubectl.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for key in range(DEEP):
            controller.queue.add(key)
        nursery.start_soon(controller.run)
        assert await process.wait() == 0
        await arrived.wait()
        nursery.cancel_scope.cancel()
    assert 0 < seen_at["while-busy"] < DEEP, (
        f"the watch event arrived after {seen_at['while-busy']} of {DEEP} reconciles"
    )
