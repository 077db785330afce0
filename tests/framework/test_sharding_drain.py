"""The drain handshake from the shard's side: a drained object is let go of only after the
reconcile already running on it has finished, and is not reconciled again."""

from __future__ import annotations

import trio

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.controller.controller import Controller, Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import drain_label, shard_label
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.testing.manager import run_manager
from kubetrio.testing.servers import ApiServer
from kubetrio.testing.waiting import eventually

RING = "drains"
SHARD, DRAIN = shard_label(RING), drain_label(RING)


class Blocking:
    """Holds its first reconcile until released."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.release = trio.Event()
        self.calls = 0
        self.finished_at = 0.0

    async def reconcile(self, key: ObjectKey) -> Result:
        self.calls += 1
        self.entered.set()
        await self.release.wait()
        self.finished_at = trio.current_time()
        return Result(requeue_after=1.0)  # a timer that must not bring it back once let go


async def test_a_drain_waits_for_the_running_reconcile(api_server: ApiServer) -> None:
    namespace = api_server.namespace
    admin = api_server.client()
    reconciler = Blocking()

    def setup(manager: Manager, _config: object) -> None:
        manager.controller("blocking").for_(ConfigMap, namespace=namespace).sharded().complete(
            reconciler
        )

    options = ShardingOptions(ring=RING, namespace=namespace, shard_id="only", run_sharder=False)
    async with run_manager(api_server, setup, sharding=options) as manager:
        (controller,) = [r for r in manager.runnables if isinstance(r, Controller)]
        await admin.create(
            ConfigMap,
            {"metadata": {"name": "cm", "labels": {SHARD: "only"}}},
            namespace=namespace,
        )
        with trio.fail_after(30):
            await reconciler.entered.wait()
        await admin.patch(
            ConfigMap, "cm", {"metadata": {"labels": {DRAIN: "true"}}}, namespace=namespace
        )
        # The shard has seen the drain and queued the key behind the running reconcile...
        cached = controller.sources[0].informer

        def drain_seen() -> None:
            cm = cached.lister.get(namespace, "cm")
            assert cm is not None and DRAIN in cm.metadata.labels

        await eventually(drain_seen, on=[cached])
        assert ObjectKey(namespace, "cm") in controller.queue._dirty
        # ...and has let go of nothing yet.
        held = await admin.get(ConfigMap, "cm", namespace=namespace)
        assert held.metadata.labels == {SHARD: "only", DRAIN: "true"}
        reconciler.release.set()
        let_go_at = 0.0

        async def let_go() -> None:
            nonlocal let_go_at
            cm = await admin.get(ConfigMap, "cm", namespace=namespace)
            assert SHARD not in cm.metadata.labels and DRAIN not in cm.metadata.labels
            let_go_at = trio.current_time()

        await eventually(let_go, interval=0.1, on=[cached])
        assert reconciler.finished_at <= let_go_at
        # The requeue timer fires and finds the object gone from this shard's cache.
        with trio.move_on_after(2.0):
            await trio.sleep_forever()
        assert reconciler.calls == 1


class Quick:
    async def reconcile(self, key: ObjectKey) -> Result:
        return Result()


async def test_a_drain_waits_for_every_controller_of_the_kind(api_server: ApiServer) -> None:
    """Two controllers of one kind (as the machine controller's main and termination queues):
    the one whose gate sees the drain first lets go only once the other is done too."""
    namespace = api_server.namespace
    admin = api_server.client()
    slow = Blocking()

    def setup(manager: Manager, _config: object) -> None:
        manager.controller("slow").for_(ConfigMap, namespace=namespace).sharded().complete(slow)
        manager.controller("quick").for_(ConfigMap, namespace=namespace).sharded().complete(Quick())

    options = ShardingOptions(ring=RING, namespace=namespace, shard_id="only", run_sharder=False)
    async with run_manager(api_server, setup, sharding=options) as manager:
        quick = next(
            r for r in manager.runnables if isinstance(r, Controller) and r.name == "quick"
        )
        await admin.create(
            ConfigMap,
            {"metadata": {"name": "cm", "labels": {SHARD: "only"}}},
            namespace=namespace,
        )
        with trio.fail_after(30):
            await slow.entered.wait()
        await admin.patch(
            ConfigMap, "cm", {"metadata": {"labels": {DRAIN: "true"}}}, namespace=namespace
        )
        cached = quick.sources[0].informer

        def drain_seen() -> None:
            cm = cached.lister.get(namespace, "cm")
            assert cm is not None and DRAIN in cm.metadata.labels

        await eventually(drain_seen, on=[cached])
        # The quick controller's gate is waiting on the slow one's reconcile: nothing let go.
        with trio.move_on_after(1.0):
            await trio.sleep_forever()
        held = await admin.get(ConfigMap, "cm", namespace=namespace)
        assert held.metadata.labels == {SHARD: "only", DRAIN: "true"}
        slow.release.set()

        async def let_go() -> None:
            cm = await admin.get(ConfigMap, "cm", namespace=namespace)
            assert SHARD not in cm.metadata.labels and DRAIN not in cm.metadata.labels

        await eventually(let_go, interval=0.1, on=[cached])
        assert slow.calls == 1
