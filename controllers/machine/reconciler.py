"""The machine reconciler: validate, then the deletion, health or creation flow.

Level-based like MCM's: every pass starts from the Machine as the cache shows it and does what
its state calls for, so a missed event or a restart costs nothing but a pass. Each pass ends
with when to look again (MCM's ShortRetry / MediumRetry / LongRetry, or the instant a timeout
passes); changes to the machine, its node, its class or its node's volume attachments bring the
next pass forward.
"""

from __future__ import annotations

from kubetrio.api.machine import (
    OPERATION_UPDATE,
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_PENDING,
    STATE_FAILED,
    Machine,
    MachineClass,
)
from kubetrio.controllers.machine import creation
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.health_check import check_health
from kubetrio.controllers.machine.inplace import in_place_update
from kubetrio.controllers.machine.nodetemplate import sync_node_template
from kubetrio.controllers.machine.preservation import Preservation
from kubetrio.controllers.machine.retry import LongRetry, ShortRetry
from kubetrio.controllers.machine.status import FINALIZER, NODE_LABEL, Operation
from kubetrio.controllers.machine.termination import terminating
from kubetrio.controllers.machine.validation import validate_class, validate_machine
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util.finalizers import ensure_finalizer
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")


class MachineReconciler:
    def __init__(self, ctx: MachineContext) -> None:
        self.ctx = ctx

    async def reconcile(self, key: ObjectKey) -> Result:
        ctx = self.ctx
        machine = ctx.machines.get(key.namespace, key.name)
        if machine is None:
            ctx.status.forget(key.namespace, key.name)
            return Result()
        if ctx.freeze.frozen and not machine.deleting:
            # MCM's safety freeze (an API server unreachable): the watchdog requeues every
            # machine when it lifts, so LongRetry is only the fallback.
            log.info("machine controller frozen, machine left alone", machine=machine.name)
            return Result(requeue_after=LongRetry)
        if machine.deleting:
            # The termination queue's (``termination``): reached here only through a key
            # queued before the deletion began, or by the safety watchdog's requeue.
            ctx.hand_over(key)
            return Result()
        problems = validate_machine(machine)
        if problems:
            return await self._invalid(machine, "; ".join(problems))
        resolved = await self.resolve_class(machine)
        if isinstance(resolved, Result):
            return resolved
        machine_class, data = resolved
        options = ctx.options.for_machine(machine)
        if FINALIZER not in machine.metadata.finalizers:
            added = await ensure_finalizer(ctx.client, machine, FINALIZER)
            if added is None:
                return Result()  # deleted meanwhile
            machine = added
        retry = LongRetry
        if machine.metadata.labels.get(NODE_LABEL) and machine.phase:
            machine, retry = await check_health(ctx, machine, options)
            await self._sync_template(machine)
            machine, updating = await in_place_update(ctx, machine, options)
            if updating is not None:
                return Result(requeue_after=min(retry, updating))
        machine, until_expiry = await Preservation(ctx, machine, options).run()
        if until_expiry is not None:
            retry = min(retry, until_expiry)
        # A Failed machine stays Failed until deleted; "VM using old node obj" has no providerID
        # and must not create (and adopt) again.
        if machine.phase in ("", PHASE_CRASH_LOOP_BACK_OFF) or (
            not machine.spec.provider_id and machine.phase != PHASE_FAILED
        ):
            # A node cached before this pass began has had its events delivered already,
            # perhaps to a pass that failed (a creation retried through API errors outlasts a
            # fast boot); one that arrives during the pass brings another pass by itself.
            joined_before = machine.phase != PHASE_PENDING and self._node_of(machine)
            with ctx.creating.running(key):
                machine, retry = await creation.create(ctx, machine, machine_class, data, options)
            if terminating(ctx, key):
                ctx.hand_over(key)  # deleted while its create call ran
                return Result()
            if joined_before and machine.phase == PHASE_PENDING:
                # No event will wake this machine: look again after ShortRetry (as MCM does
                # after every creation status write), not the creation's ten minutes.
                retry = min(retry, ShortRetry)
        return Result(requeue_after=retry)

    async def resolve_class(self, machine: Machine) -> tuple[MachineClass, SecretData] | Result:
        """The machine's class and its secret's data, or the pass's end when the class is
        missing or unfit (said on the machine). A deleting machine needs only its class's
        provider: a bad template edit must not stall a deletion, and drains never read it."""
        ctx = self.ctx
        class_name = machine.spec.class_.name
        machine_class = ctx.classes.get(machine.namespace, class_name)
        if machine_class is None:
            # The class's arrival requeues this machine (classes are watched).
            return await self._invalid(
                machine,
                f"MachineClass {go_quote(class_name)} not found in namespace "
                f"{go_quote(machine.namespace)}",
            )
        problems = validate_class(machine_class, list(ctx.drivers), provider_only=machine.deleting)
        if problems:
            return await self._invalid(
                machine, f"MachineClass {go_quote(class_name)}: " + "; ".join(problems)
            )
        return machine_class, ctx.secret_data(machine_class)

    def _node_of(self, machine: Machine) -> bool:
        """Whether the cache holds the node the machine's ``node`` label names."""
        name = machine.metadata.labels.get(NODE_LABEL, "")
        return bool(name) and self.ctx.nodes.get("", name) is not None

    async def _invalid(self, machine: Machine, problem: str) -> Result:
        """Say it on the machine (status and a Warning event, once) and wait for a fix: an
        edit of the machine or its class brings the next pass. A deleting machine's
        lastOperation holds its deletion step and a creating one's its creation: both are kept,
        the problem goes to the log and an Event only."""
        log.warning("machine cannot be reconciled", machine=machine.name, problem=problem)
        if machine.deleting or machine.phase:
            await self.ctx.status.events_only(machine, "Warning", "Invalid", problem)
        else:
            await self.ctx.status.write(
                machine, Operation(problem, STATE_FAILED, OPERATION_UPDATE), reason="Invalid"
            )
        return Result(requeue_after=LongRetry)

    async def _sync_template(self, machine: Machine) -> None:
        """The machine's ``spec.nodeTemplate`` (labels, annotations, taints) onto its node.
        A class's ``nodeTemplate`` is MCM's capacity and placement, nothing to sync."""
        template = machine.spec.node_template
        node = self.ctx.nodes.get("", machine.metadata.labels.get(NODE_LABEL, ""))
        if template is None or node is None or node.deleting:
            return
        try:
            await sync_node_template(self.ctx.target, node, template)
        except ApiError as error:
            if error.status != 422:
                raise
            # The API server refuses what validation let through (a taint value, a size):
            # say so, and keep the machine's own schedule instead of failing every pass.
            log.warning("node template rejected", machine=machine.name, error=str(error))
            await self.ctx.status.events_only(
                machine, "Warning", "NodeTemplateRejected", str(error)
            )
