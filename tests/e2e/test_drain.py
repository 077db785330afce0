"""Node drain against the emulator over HTTP, on the mock clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import Event, Node, PersistentVolume
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.drain import Drainer, DrainOptions
from kubetrio.controllers.machine.drain.metrics import drain_metrics
from kubetrio.runtime.cache import InformerCache
from kubetrio.runtime.client import Client
from kubetrio.runtime.emulator import Emulator
from kubetrio.runtime.events import EventRecorder


async def no_volumes(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
    return {}


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
    }


def pod(
    name: str,
    node_name: str = "n1",
    *,
    owner: str | None = "ReplicaSet",
    labels: Mapping[str, str] | None = None,
    grace: int = 0,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "u1", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "c", "image": "i"}],
        },
    }


def running(emu: Emulator, name: str) -> None:
    emu.set_status(
        "v1",
        "Pod",
        name,
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        "default",
    )


def budget(emu: Emulator, name: str, labels: Mapping[str, str], **status: Any) -> None:
    created = emu.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(labels)}},
        }
    )
    emu.set_status(
        "policy/v1",
        "PodDisruptionBudget",
        name,
        {"observedGeneration": created["metadata"].get("generation", 1), **status},
        "default",
    )


@asynccontextmanager
async def drainer(emu: Emulator) -> AsyncIterator[tuple[Drainer, CollectorRegistry]]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    cache = InformerCache(client)
    view = DrainCache.from_cache(cache)
    registry = CollectorRegistry()
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        yield (
            Drainer(
                client,
                view,
                no_volumes,
                metrics=drain_metrics(registry),
                events=EventRecorder(client, "kubetrio-drain"),
            ),
            registry,
        )
        nursery.cancel_scope.cancel()


async def settle(emu: Emulator, d: Drainer, pods: int) -> None:
    """Until the drain's cache shows ``pods`` pods (writes above went through the API)."""
    await d.cache.pod_changes.wait_until(
        lambda: len(d.cache.pods.list()) == pods, trio.current_time() + 60
    )


async def test_missing_node_is_nothing_to_drain(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with drainer(emu) as (d, _):
        result = await d.drain("ghost", DrainOptions())
        assert result.node_missing and result.succeeded
        assert result.summary() == "node ghost not found: nothing to drain"


async def test_evicts_cordons_and_leaves_daemonsets_and_mirrors(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("web-1"))
    emu.create(pod("web-2"))
    emu.create(pod("bare", owner=None))
    emu.create(pod("agent", owner="DaemonSet"))
    mirror = pod("static", owner=None)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    emu.create(mirror)
    emu.create(pod("elsewhere", node_name="n2"))
    emu.counters.reset()
    async with drainer(emu) as (d, registry):
        await settle(emu, d, 6)
        result = await d.drain("n1", DrainOptions())
        assert result.succeeded, result.errors
        assert sorted(r.pod for r in result.pods) == [
            "default/bare",
            "default/web-1",
            "default/web-2",
        ]
        assert sorted(result.skipped) == [
            "default/agent: DaemonSet-managed (o)",
            "default/static: mirror pod (managed by the kubelet)",
        ]
        assert result.warnings == ["deleting pod default/bare: not managed by a controller"]
        assert emu.counters.get("create", "pods", "eviction") == 3
        left = [
            name
            for name in ("web-1", "web-2", "bare", "agent", "static", "elsewhere")
            if emu.get("v1", "Pod", name, "default") is not None
        ]
        assert left == ["agent", "static", "elsewhere"]
        cordoned = emu.get("v1", "Node", "n1")
        assert cordoned is not None and cordoned["spec"]["unschedulable"] is True
        assert {t["key"] for t in cordoned["spec"]["taints"]} == {
            "dedicated",
            "node.kubernetes.io/unschedulable",
        }
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "evicted"}) == 3
        )


async def test_misconfigured_budget_fails_the_pod_by_name(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=1,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        await d.cache.pod_changes.wait_until(
            lambda: bool(d.cache.budgets.list()), trio.current_time() + 10
        )
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions())
        assert result.errors == [
            "default/db-0: pod disruption budget default/db-pdb is misconfigured and requires "
            "zero voluntary evictions"
        ]
        assert trio.current_time() - start < 1, "no pointless retries"


async def test_blocked_eviction_falls_back_to_delete_after_max_retries(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    running(emu, "db-0")
    # Not misconfigured: the only expected pod is not counted healthy.
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=2,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, registry):
        await settle(emu, d, 1)
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions(max_evict_retries=3))
        assert result.succeeded, result.errors
        assert trio.current_time() - start == pytest.approx(3 * 20, abs=1)
        assert emu.get("v1", "Pod", "db-0", "default") is None
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "pdb_blocked"})
            == 3
        )
        assert (
            registry.get_sample_value("kubetrio_drain_evictions_total", {"result": "deleted"}) == 1
        )


async def test_drain_deadline_reports_pending_pods_as_errors(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}))
    emu.create(pod("web-0"))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=2,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    async with drainer(emu) as (d, _):
        await settle(emu, d, 2)
        start = trio.current_time()
        result = await d.drain("n1", DrainOptions(timeout=90))
        assert trio.current_time() - start == pytest.approx(90, abs=0.5)
        assert result.errors == [
            "default/db-0: the drain timeout passed before the pod left the node"
        ]
        assert emu.get("v1", "Pod", "web-0", "default") is None


async def test_force_deletes_everything_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("db-0", labels={"app": "db"}, grace=600))
    running(emu, "db-0")
    budget(
        emu,
        "db-pdb",
        {"app": "db"},
        expectedPods=1,
        currentHealthy=1,
        desiredHealthy=1,
        disruptionsAllowed=0,
    )
    emu.counters.reset()
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        result = await d.drain("n1", DrainOptions(force=True))
        assert result.succeeded
        assert emu.get("v1", "Pod", "db-0", "default") is None
        assert emu.counters.get("create", "pods", "eviction") == 0


async def test_drain_records_events_on_the_node(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(node("n1"))
    emu.create(pod("web-1"))
    async with drainer(emu) as (d, _):
        await settle(emu, d, 1)
        await d.drain("n1", DrainOptions())
        events = await d.client.list(Event, namespace="default")
        reasons = [(e.involved_object.kind, e.involved_object.name, e.reason) for e in events.items]
        assert ("Node", "n1", "DrainStarted") in reasons
        assert ("Node", "n1", "DrainSucceeded") in reasons
        assert isinstance(d.cache.nodes.get("", "n1"), Node)
