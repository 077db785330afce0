"""The node-delete pieces in isolation: which Nodes count as storage nodes, delete-only
filtering (tombstones included), and the reconciler's decisions against a scripted backend."""

from __future__ import annotations

import itertools
import json
import logging
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import Node
from kubetrio.api.meta import KubeObject
from kubetrio.controllers.nodedelete import (
    RETRY_CAP,
    STUCK_AFTER,
    NodeDeleteReconciler,
    deleted_storage_nodes,
    is_storage_node,
)
from kubetrio.controllers.storage import (
    BackendUnavailable,
    NodeInUse,
    NodeLocked,
    NodeNotFound,
    StorageNode,
    StorageOptions,
    storage_metrics,
)
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown, Lister, Store
from kubetrio.runtime.controller.builder import object_key
from kubetrio.runtime.controller.controller import Controller, Result, Source
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.events.recorder import EventRecorder

DRIVER = "csi.storageos.com"
ANNOTATION = "csi.volume.kubernetes.io/nodeid"


def node(name: str, annotation: str | None = None) -> Node:
    annotations = {ANNOTATION: annotation} if annotation is not None else {}
    return msgspec.convert({"metadata": {"name": name, "annotations": annotations}}, Node)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (None, False),
        (json.dumps({DRIVER: "abc"}), True),
        (json.dumps({"other.csi.io": "x", DRIVER: ""}), True),
        (json.dumps({"other.csi.io": "x"}), False),
        ("{}", False),
        ("{broken", False),
        ('"csi.storageos.com"', False),
        (json.dumps([DRIVER]), False),
        ("", False),
    ],
)
def test_is_storage_node(annotation: str | None, expected: bool) -> None:
    assert is_storage_node(node("n", annotation), DRIVER) is expected


def test_malformed_annotations_warn_naming_the_node(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kubetrio.nodedelete")
    assert not is_storage_node(node("bad-1", "{oops"), DRIVER)
    assert not is_storage_node(node("bad-2", "[1]"), DRIVER)
    assert not is_storage_node(node("fine", "{}"), DRIVER)
    assert not is_storage_node(node("deep", "[" * 100_000), DRIVER)  # RecursionError in json
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert [e["node"] for e in events] == ["bad-1", "bad-2", "deep"]
    assert "expected a JSON object, got list" in events[1]["error"]


def test_only_deletes_of_storage_nodes_pass_and_tombstones_are_unwrapped() -> None:
    seen: list[str] = []
    predicate = deleted_storage_nodes(DRIVER, lambda n: seen.append(n.metadata.name))
    storage, plain = node("s", json.dumps({DRIVER: "1"})), node("p")
    assert not predicate.create(storage)
    assert not predicate.update(storage, storage)
    assert predicate.delete(storage) and not predicate.delete(plain)

    class Reconciler:
        async def reconcile(self, key: ObjectKey) -> Result:
            return Result()

    informer: Informer[Node] = Informer(cast(Any, None), Node)
    controller: Controller[ObjectKey] = Controller("nodedelete", Reconciler())
    controller.watch(Source(informer, object_key, (predicate,)))
    informer._emit_add(storage, False)
    informer._emit_update(storage, storage)
    informer._emit_delete(plain)
    assert len(controller.queue) == 0
    informer._emit_delete(DeletedFinalStateUnknown(ObjectKey("", "s"), storage))
    assert len(controller.queue) == 1
    assert seen == ["s", "s"]  # the direct call above, then the tombstone


class ScriptedBackend:
    def __init__(self, *outcomes: Exception | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[str] = []

    async def list_nodes(self) -> list[StorageNode]:
        return []

    async def delete_node(self, name: str) -> None:
        self.calls.append(name)
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        self.events.append((obj.metadata.name, type_, reason, message))


def reconciler(
    backend: ScriptedBackend, *existing: Node
) -> tuple[NodeDeleteReconciler, Recorder, CollectorRegistry]:
    store: Store[Node] = Store()
    for obj in existing:
        store.put(ObjectKey("", obj.metadata.name), obj)
    registry = CollectorRegistry()
    recorder = Recorder()
    rec = NodeDeleteReconciler(
        backend,
        Lister(store),
        storage_metrics(registry),
        recorder=cast(EventRecorder, recorder),
    )
    return rec, recorder, registry


KEY = ObjectKey("", "n1")


async def test_a_node_that_exists_again_is_left_alone() -> None:
    backend = ScriptedBackend()
    rec, _, _ = reconciler(backend, node("n1"))
    assert await rec.reconcile(KEY) == Result()
    assert backend.calls == []


async def test_refusals_back_off_exponentially_up_to_the_cap_and_report_changes() -> None:
    refusals: list[Exception | None] = [NodeInUse("n1")] * 3 + [NodeLocked("n1")] * 20
    backend = ScriptedBackend(*refusals, None)
    rec, recorder, registry = reconciler(backend)
    rec.deleted(node("n1", json.dumps({DRIVER: "1"})))
    delays = []
    for _ in range(23):
        result = await rec.reconcile(KEY)
        assert result.requeue_after is not None
        delays.append(result.requeue_after)
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert all(b >= a for a, b in itertools.pairwise(delays))
    assert max(delays) == RETRY_CAP
    assert await rec.reconcile(KEY) == Result()
    assert [(t, r) for _, t, r, _ in recorder.events] == [
        ("Warning", "StorageNodeDeleteFailed"),  # in use
        ("Warning", "StorageNodeDeleteFailed"),  # then locked: a new reason, a new event
        ("Normal", "StorageNodeDeleted"),
    ]
    assert recorder.events[1][3] == "storage node n1: node lock has not yet expired"
    for result, count in (("in_use", 3), ("locked", 20), ("deleted", 1)):
        value = registry.get_sample_value("kubetrio_storage_node_deletes_total", {"result": result})
        assert value == count
    # Success forgets the failures: the next refusal starts at 5 ms again.
    backend.outcomes = [BackendUnavailable("storage backend: down")]
    again = await rec.reconcile(KEY)
    assert again.requeue_after == pytest.approx(0.005)


async def test_not_found_is_success_and_without_a_known_node_no_event() -> None:
    backend = ScriptedBackend(NodeNotFound("n1"))
    rec, recorder, registry = reconciler(backend)
    assert await rec.reconcile(KEY) == Result()
    assert backend.calls == ["n1"]
    assert recorder.events == []
    not_found = registry.get_sample_value(
        "kubetrio_storage_node_deletes_total", {"result": "not_found"}
    )
    assert not_found == 1


def test_setup_without_a_backend_url_registers_nothing(caplog: pytest.LogCaptureFixture) -> None:
    from kubetrio.cmd.config import ManagerConfig
    from kubetrio.controllers import nodedelete, storagegc
    from kubetrio.runtime.manager.manager import Manager
    from kubetrio.runtime.util.duration import Duration

    caplog.set_level(logging.WARNING)
    manager = Manager(
        cast(Any, None),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        workers=ManagerConfig().workers,
    )
    nodedelete.setup(manager, ManagerConfig())
    storagegc.setup(manager, ManagerConfig())
    assert manager.runnables == []
    warned = [r.msg["controller"] for r in caplog.records if isinstance(r.msg, dict)]
    assert warned == ["nodedelete", "storagegc"]

    config = ManagerConfig(
        storage=StorageOptions(backend_url="http://storage:5705/v2", gc_interval=Duration(60))
    )
    nodedelete.setup(manager, config)
    storagegc.setup(manager, config)
    controller, gc = manager.runnables
    assert isinstance(controller, Controller) and controller.name == "nodedelete"
    assert controller.workers == 5  # --node-delete-workers
    assert controller.needs_leader_election and gc.needs_leader_election
    assert (cast(storagegc.StorageGC, gc).delay, cast(storagegc.StorageGC, gc).interval) == (30, 60)


def _levels(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (r.levelname, r.msg["event"])
        for r in caplog.records
        if r.name == "kubetrio.nodedelete" and isinstance(r.msg, dict)
    ]


async def test_expected_refusals_are_info_until_the_node_stays_pinned_too_long(
    caplog: pytest.LogCaptureFixture, mock_clock: trio.testing.MockClock
) -> None:
    """The backend holding a node in use or locked is the normal course of a delete: info
    lines, so a healthy run prints no warning; one warning once it lasts past STUCK_AFTER."""
    caplog.set_level(logging.INFO, logger="kubetrio.nodedelete")
    backend = ScriptedBackend(*[NodeInUse("n1")] * 4, NodeLocked("n1"), None)
    rec, _, _ = reconciler(backend)
    rec.deleted(node("n1", json.dumps({DRIVER: "1"})))
    await rec.reconcile(KEY)
    await rec.reconcile(KEY)
    assert _levels(caplog) == [("INFO", "storage node not deletable yet, will retry")] * 2
    caplog.clear()
    await trio.sleep(STUCK_AFTER + 1)
    await rec.reconcile(KEY)
    await rec.reconcile(KEY)
    await rec.reconcile(KEY)  # locked now: still the same wait, no second warning
    assert _levels(caplog) == [
        ("WARNING", "storage node still not deletable, will keep retrying"),
        ("INFO", "storage node not deletable yet, will retry"),
        ("INFO", "storage node not deletable yet, will retry"),
    ]
    assert await rec.reconcile(KEY) == Result()


async def test_a_failing_backend_is_a_warning_when_its_reason_is_new(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kubetrio.nodedelete")
    down = BackendUnavailable("storage backend: down")
    backend = ScriptedBackend(down, down, None)
    rec, _, _ = reconciler(backend)
    rec.deleted(node("n1", json.dumps({DRIVER: "1"})))
    await rec.reconcile(KEY)
    await rec.reconcile(KEY)
    levels = _levels(caplog)
    assert levels[:2] == [
        ("WARNING", "storage node delete failed, will retry"),
        ("INFO", "storage node delete failed, will retry"),
    ]
