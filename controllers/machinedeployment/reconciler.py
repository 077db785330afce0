"""The MachineDeployment reconcile (MCM's ``reconcileClusterMachineDeployment``): finalizer and
deletion, pause, rollback, proportional scaling, then the Recreate or RollingUpdate step, and the
status with its conditions. Level-based: every pass starts from the deployment and its sets as
the cache has them (a write made from a stale picture fails on its resourceVersion and the pass
runs again), and makes at most one step of the rollout."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.machine.status import FINALIZER
from kubetrio.controllers.machinedeployment import autoscaler, progress, scaling, taints
from kubetrio.controllers.machinedeployment.backfill import backfill_hash_labels
from kubetrio.controllers.machinedeployment.catchup import PATIENCE
from kubetrio.controllers.machinedeployment.claim import claim_sets
from kubetrio.controllers.machinedeployment.fenceposts import (
    STRATEGY_IN_PLACE_UPDATE,
    Fenceposts,
    SpecError,
)
from kubetrio.controllers.machinedeployment.inplace import InPlaceRollout
from kubetrio.controllers.machinedeployment.newset import sync_new_set
from kubetrio.controllers.machinedeployment.revisions import (
    DESIRED_REPLICAS_ANNOTATION,
    int_annotation,
)
from kubetrio.controllers.machinedeployment.rollback import rollback
from kubetrio.controllers.machinedeployment.sets import age_key
from kubetrio.controllers.machinedeployment.state import Pass, set_state, states, validate
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.typed import Client, object_path
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util import clock
from kubetrio.runtime.util.finalizers import ensure_finalizer, remove_finalizer
from kubetrio.runtime.util.labels import selects_all

# MCM looks at every deployment again after this long, whatever happens.
RESYNC = 600.0


class DeploymentReconciler:
    def __init__(
        self,
        client: Client,
        writer: Writer,
        deployments: Lister[MachineDeployment],
        sets: Lister[MachineSet],
        machines: Lister[Machine],
        nodes: Lister[Node],
        *,
        hold_autoscaler: bool = True,
    ) -> None:
        self.client = client
        self.writer = writer
        self.deployments = deployments
        self.sets = sets
        self.machines = machines
        self.nodes = nodes
        # Whether a rollout's nodes are kept from the cluster autoscaler meanwhile.
        self.hold_autoscaler = hold_autoscaler
        # deployment -> (uid, generation) whose bad spec was reported; an entry goes when the
        # deployment is gone or valid again, so deleted deployments leave nothing behind.
        self._reported: dict[ObjectKey, tuple[str, int]] = {}

    async def reconcile(self, key: ObjectKey) -> Result:
        deployment = self.deployments.get(key.namespace, key.name)
        if deployment is None:
            self._reported.pop(key, None)
            return Result()
        if self.writer.own.behind(deployment):
            # Our last write's arrival in the cache enqueues it again; this is a fallback.
            return Result(requeue_after=PATIENCE)
        try:
            bounds = validate(deployment)
            self._reported.pop(key, None)
        except SpecError as error:
            if not deployment.deleting:
                await self._invalid(deployment, error)
                return Result()
            bounds = Fenceposts(0, 0)  # a bad spec must not keep a deletion from finishing
        if not deployment.deleting and FINALIZER not in deployment.metadata.finalizers:
            added = await ensure_finalizer(self.client, deployment, FINALIZER)
            if added is None:
                return Result()
            self.writer.own.wrote(added)
            deployment = added
        selector = deployment.spec.selector
        if selector is None or selects_all(selector):
            return await self._selects_all(deployment)
        owned = await claim_sets(deployment, self.sets.list(deployment.namespace), self.writer)
        status: dict[str, Any] = msgspec.to_builtins(deployment.status)
        step = Pass(deployment, self._read_raw, bounds, owned, status)
        if deployment.deleting:
            return await self._delete(step)
        await backfill_hash_labels(step, self.writer, self.machines)
        await self._check_paused(step)
        await autoscaler.mark_triggered_machines(step, self.writer, self.machines, clock.now())
        spec = deployment.spec
        if spec.paused:
            await self._sync(step)
        elif spec.rollback_to is not None:
            await rollback(
                step,
                self.writer,
                lambda s: taints.untaint_set(self.writer, s, self.machines, self.nodes),
            )
            return Result(requeue_after=RESYNC)
        elif self._is_scaling_event(step):
            await self._sync(step)
        elif spec.strategy.type == "Recreate":
            await self._recreate(step)
        elif spec.strategy.type == STRATEGY_IN_PLACE_UPDATE:
            await self._in_place(step)
        else:
            await self._rolling(step)
        return Result(requeue_after=self._requeue(step))

    async def _invalid(self, deployment: MachineDeployment, error: SpecError) -> None:
        """MCM only logs it; a Warning Event names the field too, once per generation (every
        pass until the user edits it would repeat it)."""
        log.warning("invalid machine deployment", deployment=deployment.name, error=str(error))
        key = ObjectKey(deployment.namespace, deployment.name)
        reported = (deployment.metadata.uid, deployment.metadata.generation)
        if self._reported.get(key) != reported:
            self._reported[key] = reported
            await self.writer.event(deployment, "Warning", "InvalidSpec", str(error))

    async def _read_raw(self, deployment: MachineDeployment) -> dict[str, Any]:
        path = object_path(MachineDeployment.KIND, deployment.namespace, deployment.name)
        document: dict[str, Any] = msgspec.json.decode(await self.client.request("GET", path))
        return document

    # -- special cases

    async def _selects_all(self, deployment: MachineDeployment) -> Result:
        await self.writer.event(
            deployment,
            "Warning",
            "SelectingAll",
            "This deployment is selecting all machines. A non-empty selector is required.",
        )
        status: dict[str, Any] = msgspec.to_builtins(deployment.status)
        if status.get("observedGeneration", 0) < deployment.metadata.generation:
            status["observedGeneration"] = deployment.metadata.generation
            await self.writer.write_status(deployment, status)
        return Result()

    async def _delete(self, step: Pass) -> Result:
        """Sets go first (each takes its machines with it); the finalizer last."""
        if FINALIZER not in step.deployment.metadata.finalizers:
            return Result()
        if not step.sets:
            await remove_finalizer(self.client, step.deployment, FINALIZER)
            return Result()
        for machine_set in step.sets:
            if not machine_set.deleting:
                await self.client.delete(
                    MachineSet, machine_set.name, namespace=machine_set.namespace, missing_ok=True
                )
        await self._sync_status(step, rollout=False)
        return Result(requeue_after=RESYNC)

    async def _check_paused(self, step: Pass) -> None:
        conditions = progress.paused_condition(
            step.deployment.spec.paused, step.status.get("conditions") or [], clock.now()
        )
        if conditions is not None:
            step.status["conditions"] = conditions
            step.deployment = await self.writer.write_status(step.deployment, step.status)

    def _is_scaling_event(self, step: Pass) -> bool:
        """The deployment's size differs from the one its active sets were scaled for."""
        new = step.new_set()
        if new is None:
            return False
        running = [s for s in step.sets if s.spec.replicas > 0]
        if not running and step.replicas > 0:
            return True
        for machine_set in running:
            desired = int_annotation(machine_set.metadata.annotations, DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != step.replicas:
                return True
        return False

    # -- scaling (also while paused)

    async def _sync(self, step: Pass) -> None:
        """A resize: MCM's ``sync``, proportional across a rollout in flight."""
        new = await sync_new_set(step, self.writer, create=False)
        old = step.old_sets(new)
        sizes = scaling.scale(
            step.strategy,
            step.replicas,
            step.bounds.max_surge,
            int(step.status.get("replicas") or 0),
            set_state(new) if new is not None else None,
            states(old),
        )
        await self._scale(step, sizes)
        if step.deployment.spec.paused and step.deployment.spec.rollback_to is None:
            await self._cleanup(step, new)
        await self._sync_status(step, rollout=False)

    # -- strategies

    async def _rolling(self, step: Pass) -> None:
        new = await sync_new_set(step, self.writer, create=True)
        assert new is not None
        old = step.old_sets(new)
        for updated in await taints.taint_old_sets(self.writer, old, self.machines, self.nodes):
            step.replace(updated)
        await self._autoscaler_hands_off(step, new)
        sizes = scaling.rolling_step(
            step.replicas,
            step.bounds.max_surge,
            step.bounds.max_unavailable,
            set_state(new),
            states(step.old_sets(new)),
        )
        if sizes:
            await self._scale(step, sizes)
        elif progress.complete(step.spec(), step.status):
            await self._rollout_done(step, new)
        await self._sync_status(step)

    async def _in_place(self, step: Pass) -> None:
        rollout = InPlaceRollout(
            step, self.writer, self.machines, self.nodes, hold_autoscaler=self.hold_autoscaler
        )
        new = await rollout.run()
        if new is not None and progress.complete(step.spec(), step.status):
            if self.hold_autoscaler:
                await autoscaler.enable_scale_down(
                    self.writer, step.sets, self.machines, self.nodes
                )
            await self._cleanup(step, new)
        await self._sync_status(step)

    async def _autoscaler_hands_off(self, step: Pass, new: MachineSet | None) -> None:
        old = step.old_sets(new)
        if self.hold_autoscaler and old and not autoscaler.scaled_to_zero(old):
            await autoscaler.disable_scale_down(self.writer, step.sets, self.machines, self.nodes)

    async def _rollout_done(self, step: Pass, new: MachineSet) -> None:
        if self.hold_autoscaler:
            await autoscaler.enable_scale_down(self.writer, step.sets, self.machines, self.nodes)
        if step.strategy == "RollingUpdate":
            step.replace(await taints.untaint_set(self.writer, new, self.machines, self.nodes))
        await self._cleanup(step, new)

    async def _scale(self, step: Pass, sizes: dict[str, int]) -> None:
        ceiling = step.replicas + step.bounds.max_surge
        for machine_set in list(step.sets):
            if machine_set.name in sizes:
                updated = await self.writer.scale_set(
                    step.deployment, machine_set, sizes[machine_set.name], ceiling
                )
                step.replace(updated)

    async def _recreate(self, step: Pass) -> None:
        new = await sync_new_set(step, self.writer, create=False)
        await self._autoscaler_hands_off(step, new)
        sizes = scaling.recreate_scale_down(states(step.old_sets(new)))
        if sizes:
            await self._scale(step, sizes)
            await self._sync_status(step)
            return
        if self._old_machines_running(step, new):
            await self._sync_status(step)
            return
        if new is None:
            new = await sync_new_set(step, self.writer, create=True)
            assert new is not None
        await self._scale(step, {new.name: step.replicas})
        if progress.complete(step.spec(), step.status):
            await self._rollout_done(step, new)
        await self._sync_status(step)

    def _old_machines_running(self, step: Pass, new: MachineSet | None) -> bool:
        """Recreate waits until no machine of an old set exists, not only until they are
        asked to go: old and new machines never run side by side."""
        old = step.old_sets(new)
        if sum(s.status.replicas for s in old):
            return True
        old_uids = {s.metadata.uid for s in old}
        return any(
            (ref := m.metadata.controller_ref()) is not None and ref.uid in old_uids
            for m in self.machines.list(step.namespace)
        )

    async def _cleanup(self, step: Pass, new: MachineSet | None) -> None:
        """Old sets beyond ``revisionHistoryLimit``, oldest first, once they are empty."""
        limit = step.deployment.spec.revision_history_limit
        if limit is None:
            return
        alive = [s for s in step.old_sets(new) if not s.deleting]
        excess = len(alive) - limit
        if excess <= 0:
            return
        alive.sort(
            key=lambda s: age_key(
                s.metadata.creation_timestamp or "", s.metadata.annotations, s.name
            )
        )
        for machine_set in alive[:excess]:
            if (
                machine_set.status.replicas != 0
                or machine_set.spec.replicas != 0
                or machine_set.metadata.generation > machine_set.status.observed_generation
            ):
                continue
            log.info("deleting old machine set", deployment=step.name, machineset=machine_set.name)
            await self.client.delete(
                MachineSet, machine_set.name, namespace=machine_set.namespace, missing_ok=True
            )

    # -- status

    async def _sync_status(self, step: Pass, *, rollout: bool = True) -> None:
        new = step.new_set()
        now = clock.now()
        failed = [
            msgspec.to_builtins(m) for s in step.sets for m in (s.status.failed_machines or ())
        ]
        spec = step.spec()
        status = progress.calculate_status(
            spec, states(step.sets), set_state(new) if new else None, step.status, failed, now
        )
        if rollout:
            status = progress.rollout_status(
                spec,
                step.status,
                status,
                new.name if new else None,
                _replica_failure(step, new),
                now,
            )
        if progress.status_update_required(step.status, status):
            step.deployment = await self.writer.write_status(step.deployment, status)
            step.status = status
        step.requeue = progress.requeue_after(spec, step.status, status, now)

    def _requeue(self, step: Pass) -> float:
        stuck = step.requeue
        # MCM re-queues a deadline already passed with rate limiting; a second is as prompt.
        return RESYNC if stuck is None else min(RESYNC, max(stuck, 1.0))


def _replica_failure(step: Pass, new: MachineSet | None) -> progress.Condition | None:
    """A set's ReplicaFailure (the new set's first) surfaces on the deployment."""
    ordered = ([new] if new else []) + [s for s in step.sets if s is not new]
    for machine_set in ordered:
        condition = machine_set.condition(progress.REPLICA_FAILURE)
        if condition is not None:
            return {
                "type": progress.REPLICA_FAILURE,
                "status": condition.status,
                "lastUpdateTime": condition.last_transition_time,
                "lastTransitionTime": condition.last_transition_time,
                "reason": condition.reason,
                "message": condition.message,
            }
    return None
