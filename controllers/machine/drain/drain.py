"""Running a drain: cordon, let the pod cache catch up, then remove every selected pod, under
one deadline.

MCM's order of work is kept: pods without volumes go concurrently (bounded); pods holding
driver-owned volumes go one at a time, highest priority first, and each waits until its volumes
left the node (so the next one's attach cannot be starved by this one's detach) and, as a
courtesy, until they are attached elsewhere. What changed from MCM: every wait reads the informer
cache and wakes on its changes (no 5 s polls, no event buffers to overflow); a pod recreated under
the same name (new UID) counts as gone; and the drain's deadline bounds everything — a pod still
pending when it passes is an error, never a silent success.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec
import trio

from kubetrio.api.core import Node, Pod, Taint
from kubetrio.controllers.machine.drain.budgets import budgets_for, is_misconfigured
from kubetrio.controllers.machine.drain.cache import ATTACHMENT_PV_INDEX, DrainCache
from kubetrio.controllers.machine.drain.catchup import CATCH_UP_TIMEOUT, describe, wait_for_pods
from kubetrio.controllers.machine.drain.metrics import DrainMetrics
from kubetrio.controllers.machine.drain.selection import pod_name, select_pods
from kubetrio.controllers.machine.drain.volumes import (
    PodVolumes,
    VolumeIdResolver,
    pods_with_volumes,
)
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.retry import retry_transient
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.drain")

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# MCM waits this long beyond a pod's grace period for it to disappear.
TERMINATION_SLACK = 30.0


@dataclass(frozen=True, slots=True)
class DrainOptions:
    timeout: float = 7200.0  # the whole drain, every wait included
    max_evict_retries: int = 360
    eviction_retry_interval: float = 20.0
    pv_detach_timeout: float = 120.0
    pv_reattach_timeout: float = 90.0
    force: bool = False
    grace_period_seconds: int | None = None  # None: each pod's own
    max_parallel_evictions: int = 20
    eviction_supported: bool = True  # discovery lists pods/eviction
    # False: the caller keeps pods off the node its own way (a preserved node's taint).
    cordon: bool = True


class PodDrainError(Exception):
    pass


@dataclass(slots=True)
class PodReport:
    pod: str
    error: str | None = None
    phases: dict[str, float] = field(default_factory=dict)  # evict/terminate/detach/reattach s
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DrainResult:
    node: str
    node_missing: bool = False
    pods: list[PodReport] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failure: str | None = None  # the drain could not even start (cordon failed)

    @property
    def errors(self) -> list[str]:
        pods = [f"{report.pod}: {report.error}" for report in self.pods if report.error]
        return [self.failure, *pods] if self.failure else pods

    @property
    def succeeded(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        if self.node_missing:
            return f"node {self.node} not found: nothing to drain"
        if self.failure:
            return f"drain of {self.node} failed: {self.failure}"
        if self.errors:
            return f"drain of {self.node} failed for {len(self.errors)} pod(s): " + "; ".join(
                self.errors
            )
        return f"drained {len(self.pods)} pod(s) from {self.node}"


class Drainer:
    """Drains nodes with one client, one cache view and the volume-ID resolver of a driver."""

    def __init__(
        self,
        client: Client,
        cache: DrainCache,
        resolve_volume_ids: VolumeIdResolver,
        *,
        metrics: DrainMetrics | None = None,
        events: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.resolve_volume_ids = resolve_volume_ids
        self.metrics = metrics
        self.events = events

    async def drain(
        self, node_name: str, options: DrainOptions, *, node: Node | None = None
    ) -> DrainResult:
        """``node``: a copy fresher than the cache (the caller just wrote it), so the cordon's
        conditional write does not start from a stale resourceVersion."""
        started = time.perf_counter()
        deadline = trio.current_time() + options.timeout
        result = DrainResult(node_name)
        node = node or self.cache.nodes.get("", node_name)
        if node is None:
            result.node_missing = True
            log.info("node not found, nothing to drain", node=node_name)
            return result
        await self._event(node, "Normal", "DrainStarted", f"draining node ({_mode(options)})")
        try:
            if options.cordon:
                await self.cordon(node)
            catch_up = min(deadline, trio.current_time() + CATCH_UP_TIMEOUT)
            missing = await wait_for_pods(self.client, self.cache, node_name, catch_up)
        except (ApiError, PodDrainError) as error:
            result.failure = str(error)
            await self._event(node, "Warning", "DrainFailed", result.summary())
            return result
        pods = self.cache.pods_on(node_name)
        if missing and not options.force:
            # Never decide from a cache that may lack a pod: fail, and the step is retried.
            result.failure = describe(missing)
            await self._event(node, "Warning", "DrainFailed", result.summary())
            return result
        # A forced drain deletes without waiting on the cache: the API's word is enough.
        selection = select_pods([*pods, *missing])
        result.skipped = [f"{pod_name(pod)}: {why}" for pod, why in selection.skipped]
        result.warnings = selection.warnings
        for warning in selection.warnings:
            log.warning(warning, node=node_name)
        reports = {pod_name(pod): PodReport(pod_name(pod)) for pod in selection.remove}
        result.pods = list(reports.values())
        with trio.move_on_at(deadline):
            if options.force:
                await self._remove_all(selection.remove, reports, options, force=True)
            else:
                with_volumes, without = await pods_with_volumes(
                    selection.remove,
                    self.cache.claims,
                    self.cache.volumes,
                    self.resolve_volume_ids,
                )
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._remove_all, without, reports, options, False)
                    nursery.start_soon(
                        self._remove_serially, node_name, with_volumes, reports, options, deadline
                    )
        for report in result.pods:
            if report.error is None and "done" not in report.phases:
                report.error = "the drain timeout passed before the pod left the node"
            report.phases.pop("done", None)
        outcome = "success" if result.succeeded else "failed"
        if self.metrics is not None:
            self.metrics.duration.labels(outcome).observe(time.perf_counter() - started)
        await self._event(
            node,
            "Normal" if result.succeeded else "Warning",
            "DrainSucceeded" if result.succeeded else "DrainFailed",
            result.summary(),
        )
        log.info(
            "drain finished",
            node=node_name,
            result=outcome,
            pods=len(result.pods),
            errors=len(result.errors),
        )
        return result

    # -- cordon ---------------------------------------------------------------------------

    async def cordon(self, node: Node) -> None:
        """``spec.unschedulable`` and the NoSchedule taint, guarded by the resourceVersion."""
        for _ in range(5):
            taints = [t for t in node.spec.taints if t.key != UNSCHEDULABLE_TAINT]
            already = node.spec.unschedulable and len(taints) < len(node.spec.taints)
            if already:
                return
            wanted = [_taint_doc(t) for t in taints]
            wanted.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
            try:
                # The resourceVersion makes the merge patch conditional: the taint list is
                # replaced whole, so a concurrent change to it must fail us, not be lost.
                patch = {
                    "metadata": {"resourceVersion": node.metadata.resource_version},
                    "spec": {"unschedulable": True, "taints": wanted},
                }
                await retry_transient(self.client.patch, Node, node.name, patch)
                return
            except ApiError as error:
                if error.status == 404:
                    return  # gone meanwhile: nothing left to protect
                if error.status != 409:
                    raise PodDrainError(f"node {node.name}: cordon failed: {error}") from error
                fresh = await retry_transient(self.client.get_or_none, Node, node.name)
                if fresh is None:
                    return
                node = fresh
        raise PodDrainError(f"node {node.name}: could not cordon, it kept changing")

    # -- removing pods --------------------------------------------------------------------

    async def _remove_all(
        self,
        pods: Sequence[Pod],
        reports: dict[str, PodReport],
        options: DrainOptions,
        force: bool,
    ) -> None:
        limiter = trio.CapacityLimiter(options.max_parallel_evictions)

        async def one(pod: Pod) -> None:
            async with limiter:
                report = reports[pod_name(pod)]
                try:
                    if force:
                        await self._delete(pod, 0)
                    else:
                        await self._evict_and_wait(pod, report, options)
                    report.phases["done"] = 0.0
                except (ApiError, PodDrainError) as error:
                    report.error = str(error)

        async with trio.open_nursery() as nursery:
            for pod in pods:
                nursery.start_soon(one, pod)

    async def _remove_serially(
        self,
        node_name: str,
        entries: Sequence[PodVolumes],
        reports: dict[str, PodReport],
        options: DrainOptions,
        deadline: float,
    ) -> None:
        for index, entry in enumerate(entries):
            report = reports[pod_name(entry.pod)]
            try:
                await self._evict_and_wait(entry.pod, report, options)
                node_gone = not await self._wait_for_detach(node_name, entry, report, options)
                if node_gone:
                    # The node is gone, and so are all attachments to it: the rest is done.
                    for rest in entries[index:]:
                        reports[pod_name(rest.pod)].phases["done"] = 0.0
                    return
                await self._wait_for_reattach(node_name, entry, report, options)
                report.phases["done"] = 0.0
            except (ApiError, PodDrainError) as error:
                report.error = str(error)

    async def _evict_and_wait(self, pod: Pod, report: PodReport, options: DrainOptions) -> None:
        started = trio.current_time()
        grace = options.grace_period_seconds
        attempt = 0
        while True:
            if attempt >= options.max_evict_retries or not options.eviction_supported:
                await self._delete(pod, grace)
                break
            try:
                await retry_transient(
                    self.client.evict,
                    pod.name,
                    namespace=pod.namespace,
                    grace_period_seconds=grace,
                )
                self._count("evicted")
                break
            except ApiError as error:
                if error.status == 404:
                    self._count("not_found")
                    break
                if error.status != 429:
                    self._count("failed")
                    raise PodDrainError(f"eviction failed: {error}") from error
                for budget in budgets_for(pod, self.cache.budgets):
                    if is_misconfigured(budget):
                        self._count("pdb_misconfigured")
                        raise PodDrainError(
                            f"pod disruption budget {budget.namespace}/{budget.name} is "
                            "misconfigured and requires zero voluntary evictions"
                        ) from error
                self._count("pdb_blocked")
                attempt += 1
                await trio.sleep(options.eviction_retry_interval)
        evicted = trio.current_time()
        self._phase(report, "evict", evicted - started)
        limit = grace if grace is not None else pod.spec.termination_grace_period_seconds or 30
        gone = await self.cache.pod_changes.wait_until(
            lambda: _gone(pod, self.cache), evicted + limit + TERMINATION_SLACK
        )
        if not gone:
            raise PodDrainError(
                f"pod still present {limit + TERMINATION_SLACK:g}s after its eviction"
            )
        self._phase(report, "terminate", trio.current_time() - evicted)

    async def _delete(self, pod: Pod, grace: int | None) -> None:
        try:
            await retry_transient(
                self.client.delete,
                Pod,
                pod.name,
                namespace=pod.namespace,
                grace_period_seconds=grace,
            )
            self._count("deleted")
        except ApiError as error:
            if error.status != 404:
                self._count("failed")
                raise PodDrainError(f"deletion failed: {error}") from error
            self._count("not_found")

    async def _wait_for_detach(
        self, node_name: str, entry: PodVolumes, report: PodReport, options: DrainOptions
    ) -> bool:
        """True once the pod's volumes left the node; False if the node itself is gone."""
        started = trio.current_time()
        ids = [volume_id for _, volume_id in entry.volumes]

        def detached() -> bool:
            node = self.cache.nodes.get("", node_name)
            if node is None:
                return True
            attached = [v.name for v in node.status.volumes_attached]
            return not any(volume_id in name for volume_id in ids for name in attached)

        grace = entry.pod.spec.termination_grace_period_seconds or 0
        if not await self.cache.node_changes.wait_until(
            detached, started + grace + options.pv_detach_timeout
        ):
            raise PodDrainError(
                f"timeout while waiting for PVs {', '.join(ids)} to detach from node {node_name}"
            )
        self._phase(report, "detach", trio.current_time() - started)
        return self.cache.nodes.get("", node_name) is not None

    async def _wait_for_reattach(
        self, node_name: str, entry: PodVolumes, report: PodReport, options: DrainOptions
    ) -> None:
        """Wait (bounded, a timeout is only a warning) for the volumes to attach elsewhere."""
        started = trio.current_time()
        names = [name for name, _ in entry.volumes]

        def reattached() -> bool:
            return all(
                any(
                    va.spec.node_name != node_name and va.status.attached
                    for va in self.cache.attachments.by_index(ATTACHMENT_PV_INDEX, name)
                )
                for name in names
            )

        if await self.cache.attachment_changes.wait_until(
            reattached, started + options.pv_reattach_timeout
        ):
            self._phase(report, "reattach", trio.current_time() - started)
            return
        warning = (
            f"volumes {', '.join(names)} not attached elsewhere within "
            f"{options.pv_reattach_timeout:g}s"
        )
        report.warnings.append(warning)
        log.warning(warning, pod=report.pod, node=node_name)

    # -- bookkeeping ----------------------------------------------------------------------

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.evictions.labels(outcome).inc()

    def _phase(self, report: PodReport, phase: str, seconds: float) -> None:
        report.phases[phase] = seconds
        if self.metrics is not None:
            self.metrics.pod_seconds.labels(phase).observe(seconds)
        log.info("pod drain phase", pod=report.pod, phase=phase, seconds=round(seconds, 3))

    async def _event(self, node: Node, type_: str, reason: str, message: str) -> None:
        if self.events is not None:
            self.events.record(node, type_, reason, message)


def _gone(pod: Pod, cache: DrainCache) -> bool:
    current = cache.pods.get(pod.namespace, pod.name)
    return current is None or current.metadata.uid != pod.metadata.uid


def _mode(options: DrainOptions) -> str:
    return "force: delete without waiting" if options.force else "evict"


def _taint_doc(taint: Taint) -> dict[str, object]:
    doc = msgspec.to_builtins(taint)
    assert isinstance(doc, dict)
    return doc
