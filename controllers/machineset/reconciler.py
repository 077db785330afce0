"""One pass over a MachineSet, as MCM's ``reconcileClusterMachineSet``: validate, hold the
finalizer, claim machines, keep their node template and configuration in step with the set's
template, create or delete to match ``spec.replicas`` (replacing Failed machines), and write
the status.

Replica management waits while the set's expectations are pending: the cache has not yet
shown the creations or deletions of the last pass, and acting on it would do them twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubetrio.api.core import Node
from kubetrio.api.machine import (
    LABEL_NODE_UPDATE_RESULT,
    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL,
    PHASE_FAILED,
    PHASE_TERMINATING,
    PRESERVE_AUTO_PRESERVED,
    PRESERVE_NOW,
    PRESERVE_WHEN_FAILED,
    Machine,
)
from kubetrio.api.machineset import LABEL_MACHINE_SET_SCALE_UP_DISABLED, MachineSet
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.preservation import preserve_state
from kubetrio.controllers.machine.status import FINALIZER, NODE_LABEL
from kubetrio.controllers.machineset.claim import claim_machines
from kubetrio.controllers.machineset.control import MachineControl, slow_start
from kubetrio.controllers.machineset.expectations import Expectations
from kubetrio.controllers.machineset.preservation import manage_auto_preservation
from kubetrio.controllers.machineset.priority import machines_to_delete, marked_for_deletion
from kubetrio.controllers.machineset.status import compute_status, status_patch
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, object_path
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util.clock import now
from kubetrio.runtime.util.finalizers import ensure_finalizer, remove_finalizer
from kubetrio.runtime.util.log import get_logger

STALE_RETRY = 1.0

log = get_logger("kubetrio.machineset")

# MCM's BurstReplicas: at most this many creations or deletions per pass.
BURST_REPLICAS = 100
# MCM resyncs every set this often, in case an event was missed.
RESYNC_PERIOD = 600.0
# Labels that stop a set from creating machines (the safety controller's freeze; in-place
# updates moving machines between sets).
FREEZE_LABEL = "freeze"
SCALE_UP_DISABLED_LABEL = LABEL_MACHINE_SET_SCALE_UP_DISABLED


class ReplicaError(Exception):
    """Creating or deleting machines failed; retried with the controller's rate limiter."""


def validate(ms: MachineSet) -> str | None:
    """MCM's MachineSet validation, as one line naming the field; None when valid."""
    if ms.spec.replicas < 0:
        return "spec.replicas: Required value: Replicas has to be a whole number"
    if ms.spec.auto_preserve_failed_machine_max < 0:
        return "spec.autoPreserveFailedMachineMax: Invalid value: must be a whole number"
    selector = ms.spec.selector
    if selector is None or not (selector.match_labels or selector.match_expressions):
        # An empty selector would select (and adopt) every machine in the namespace.
        return "spec.selector: Required value"
    labels = ms.spec.template.metadata.labels
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return (
            "spec.selector.matchLabels: Required value: is not matching with "
            "spec.template.metadata.labels"
        )
    if not ms.spec.template.spec.class_.name:
        return "spec.template.spec.class.name: Required value"
    return None


def is_terminating(machine: Machine) -> bool:
    return machine.phase == PHASE_TERMINATING or machine.deleting


@dataclass
class MachineSetContext:
    client: Client
    sets: Lister[MachineSet]
    machines: Lister[Machine]
    control: MachineControl
    # The target cluster's nodes: a node's preserve annotation keeps its Failed machine.
    nodes: Lister[Node] | None = None
    expectations: Expectations[ObjectKey] = field(default_factory=Expectations)
    burst_replicas: int = BURST_REPLICAS


class FreshSet:
    """The set as the API server has it now, read at most once per pass: the uncached read
    that adoption needs, and the template with every field for new machines."""

    def __init__(self, client: Client, ms: MachineSet) -> None:
        self._client = client
        self._ms = ms
        self._raw: dict[str, Any] | None = None
        self._read = False

    async def get(self) -> dict[str, Any] | None:
        if not self._read:
            try:
                payload = await self._client.request(
                    "GET", object_path(MachineSet.KIND, self._ms.namespace, self._ms.name)
                )
            except ApiError as error:
                if error.status != 404:
                    raise
            else:
                raw = msgspec.json.decode(payload)
                if raw.get("metadata", {}).get("uid") == self._ms.metadata.uid:
                    self._raw = raw
            self._read = True
        return self._raw

    async def can_adopt(self) -> str | None:
        raw = await self.get()
        ms = self._ms
        if raw is None:
            return f"original MachineSet {ms.namespace}/{ms.name} gone"
        deleted = raw["metadata"].get("deletionTimestamp")
        if deleted:
            return f"{ms.namespace}/{ms.name} has just been deleted at {deleted}"
        return None

    async def template(self) -> dict[str, Any]:
        raw = await self.get()
        if raw is None:
            raise ReplicaError(f"MachineSet {self._ms.namespace}/{self._ms.name} is gone")
        template = (raw.get("spec") or {}).get("template") or {}
        return template if isinstance(template, dict) else {}


class MachineSetReconciler:
    def __init__(self, ctx: MachineSetContext) -> None:
        self.ctx = ctx

    async def reconcile(self, key: ObjectKey) -> Result:
        ctx = self.ctx
        ms = ctx.sets.get(key.namespace, key.name)
        if ms is None:
            ctx.expectations.forget(key)
            return Result()
        problem = validate(ms)
        if problem is not None:
            # Nothing to retry until the spec changes, which brings the set back.
            log.warning("machineset invalid", machineset=ms.name, problem=problem)
            return Result()
        if not ms.deleting and FINALIZER not in ms.metadata.finalizers:
            written = await ensure_finalizer(ctx.client, ms, FINALIZER)
            if written is None:
                return Result()
            ms = written
        needs_sync = ctx.expectations.satisfied(key)
        fresh = FreshSet(ctx.client, ms)
        machines, errors = await claim_machines(
            ctx.client, ms, ctx.machines.list(ms.namespace), fresh.can_adopt
        )
        if errors:
            raise ReplicaError("; ".join(errors))
        await self._sync_templates(ms, machines, fresh)

        manage_error: str | None = None
        if not ms.deleting:
            machines = await manage_auto_preservation(ctx.client, ms, machines)
            if needs_sync:
                manage_error = await self._manage_replicas(key, ms, machines, fresh)
        elif not machines:
            await remove_finalizer(ctx.client, ms, FINALIZER)
            return Result()
        elif FINALIZER in ms.metadata.finalizers:
            await ctx.control.delete_all(ms, machines)

        moment = now()
        status, next_available = compute_status(ms, machines, manage_error, moment)
        patch = status_patch(ms, status, moment)
        if patch is not None:
            try:
                await ctx.client.patch(
                    MachineSet, ms.name, patch, namespace=ms.namespace, subresource="status"
                )
            except ApiError as error:
                if error.status == 409:
                    # Someone wrote the set since our cache saw it: its watch event brings the
                    # newer copy; look again then (or shortly, should the event have passed).
                    return Result(requeue_after=STALE_RETRY)
                if error.status != 404:
                    raise
                return Result()
        if manage_error is not None:
            raise ReplicaError(manage_error)
        waits = [RESYNC_PERIOD, next_available, ctx.expectations.expires_in(key)]
        return Result(requeue_after=min(w for w in waits if w is not None))

    async def _manage_replicas(
        self, key: ObjectKey, ms: MachineSet, machines: list[Machine], fresh: FreshSet
    ) -> str | None:
        """MCM's manageReplicas: create the missing, delete the surplus, the machines the
        autoscaler marked and the Failed."""
        ctx = self.ctx
        active = [m for m in machines if not is_terminating(m)]
        diff = len(active) - ms.spec.replicas
        if diff < 0:
            if ms.metadata.labels.get(FREEZE_LABEL) == "True":
                log.info("machineset frozen, not creating", machineset=ms.name)
                return None
            if SCALE_UP_DISABLED_LABEL in ms.metadata.labels:
                log.info("machineset scale-up disabled", machineset=ms.name)
                return None
            wanted = min(-diff, ctx.burst_replicas)
            template = await fresh.template()
            ctx.expectations.expect_creations(key, wanted)
            log.info(
                "too few replicas, creating",
                machineset=ms.name,
                replicas=ms.spec.replicas,
                creating=wanted,
            )
            created, error = await slow_start(wanted, lambda: ctx.control.create(ms, template))
            # Creations never attempted will never be observed.
            for _ in range(wanted - created):
                ctx.expectations.creation_observed(key)
            return error

        # A machine just moved here by an in-place update counts before the set's replicas
        # are raised for it: it must not be taken for a surplus meanwhile.
        removable = [
            m
            for m in active
            if m.metadata.labels.get(LABEL_NODE_UPDATE_RESULT) != LABEL_VALUE_NODE_UPDATE_SUCCESSFUL
        ]
        surplus = len(removable) - ms.spec.replicas
        stale = (
            machines_to_delete(removable, min(surplus, ctx.burst_replicas)) if surplus > 0 else []
        )
        stale += [
            m for m in marked_for_deletion(removable, ms.metadata.annotations) if m not in stale
        ]
        stale += [
            m
            for m in removable
            if m.phase == PHASE_FAILED and m not in stale and self._failed_goes(m)
        ]
        stale = stale[: ctx.burst_replicas]
        if not stale:
            return None
        log.info(
            "deleting machines",
            machineset=ms.name,
            replicas=ms.spec.replicas,
            machines=",".join(m.name for m in stale),
        )
        ctx.expectations.expect_deletions(key, [m.name for m in stale])
        failed = await ctx.control.delete_all(ms, stale)
        for name in failed:
            ctx.expectations.deletion_observed(key, name)
        return next(iter(failed.values()), None)

    def _failed_goes(self, machine: Machine) -> bool:
        """MCM's ``shouldFailedMachineBeTerminated``: not while preserved, or about to be."""
        until = parse_time(machine.status.current_status.preserve_expiry_time)
        if until is not None:
            return until <= now()
        node_name = machine.metadata.labels.get(NODE_LABEL, "")
        node = self.ctx.nodes.get("", node_name) if self.ctx.nodes and node_name else None
        state = preserve_state(machine, node)
        return state is None or state.effective not in (
            PRESERVE_NOW,
            PRESERVE_WHEN_FAILED,
            PRESERVE_AUTO_PRESERVED,
        )

    async def _sync_templates(
        self, ms: MachineSet, machines: list[Machine], fresh: FreshSet
    ) -> None:
        """MCM's in-place propagation of the template's nodeTemplate and machineConfiguration
        (to machines neither Failed nor Terminating) and class kind (to all)."""
        spec = ms.spec.template.spec
        for machine in machines:
            active = machine.phase not in (PHASE_FAILED, PHASE_TERMINATING)
            fields: list[tuple[str, str]] = []
            if active and machine.spec.node_template != spec.node_template:
                fields.append(("nodeTemplate", "/spec/nodeTemplate"))
            if active and machine.spec.machine_configuration != spec.machine_configuration:
                fields.append(("machineConfiguration", "/spec/machineConfiguration"))
            if machine.spec.class_.kind != spec.class_.kind:
                fields.append(("class", "/spec/class"))
            if not fields or machine.deleting:
                continue
            raw_spec = (await fresh.template()).get("spec") or {}
            ops: list[dict[str, Any]] = []
            for name, path in fields:
                if name == "class":
                    value = {**_class_of(machine), "kind": spec.class_.kind}
                    ops.append({"op": "add", "path": path, "value": value})
                elif name in raw_spec:
                    ops.append({"op": "add", "path": path, "value": raw_spec[name]})
                else:
                    ops.append({"op": "remove", "path": path})
            try:
                await self.ctx.control.patch_spec(machine, ops)
            except ApiError as error:
                if error.status not in (404, 409, 422):
                    raise
                continue  # changed or gone meanwhile: its update event brings the set back
            log.info("machine spec synced", machineset=ms.name, machine=machine.name)


def _class_of(machine: Machine) -> dict[str, Any]:
    c = machine.spec.class_
    out = {"kind": c.kind, "name": c.name}
    if c.api_group:
        out["apiGroup"] = c.api_group
    return out
