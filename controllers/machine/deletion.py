"""The deletion flow: Terminating, then GetVMStatus → drain → VolumeAttachments → VM → Node →
finalizer, each step recorded in ``lastOperation`` before the next begins.

The recorded step is the only state: a manager killed anywhere in the flow is replaced by one
that reads the step back and carries on. Every step is safe to repeat. Steps that finish at once
hand over to the next in the same reconcile (MCM waits a 5 s requeue between each); a step that
must wait for the world returns when to look again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from kubetrio.api.core import Node, Secret
from kubetrio.api.machine import (
    OPERATION_DELETE,
    PHASE_FAILED,
    PHASE_TERMINATING,
    STATE_FAILED,
    STATE_PROCESSING,
    Machine,
    MachineClass,
)
from kubetrio.api.meta import parse_time
from kubetrio.api.storage import VolumeAttachment
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.context import ATTACHMENT_NODE_INDEX, MachineContext
from kubetrio.controllers.machine.drain.drain import DrainOptions, DrainResult
from kubetrio.controllers.machine.driver.codes import TRANSIENT_CODES, Code, MachineError
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.driver.providerid import same_vm
from kubetrio.controllers.machine.health import is_healthy
from kubetrio.controllers.machine.nodeconditions import set_node_condition
from kubetrio.controllers.machine.nodes import release_node
from kubetrio.controllers.machine.options import (
    FORCE_DRAIN_TIMEOUT,
    UNHEALTHY_NODE_FORCE_AFTER,
    MachineOptions,
)
from kubetrio.controllers.machine.retry import LongRetry, MediumRetry, ShortRetry
from kubetrio.controllers.machine.status import (
    DELETE_VOLUME_ATTACHMENTS,
    FINALIZER,
    FORCE_DELETION_LABEL,
    GET_VM_STATUS,
    INITIATE_DRAIN,
    INITIATE_FINALIZER_REMOVAL,
    INITIATE_NODE_DELETION,
    INITIATE_VM_DELETION,
    NODE_LABEL,
    Operation,
    deletion_step,
)
from kubetrio.runtime.cache.changes import any_change
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.retry import retry_transient
from kubetrio.runtime.util import finalizers
from kubetrio.runtime.util.clock import seconds_since
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

TERMINATING_CONDITION = "Terminating"
_TRUE_VALUES = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool


@dataclass(slots=True)
class Deletion:
    ctx: MachineContext
    machine_class: MachineClass
    data: SecretData
    options: MachineOptions
    # The node as this pass last wrote it (fresher than the cache, which has not seen it yet).
    written_node: Node | None = None

    def node_name(self, machine: Machine) -> str:
        return machine.metadata.labels.get(NODE_LABEL) or machine.status.node

    async def step_to(
        self, machine: Machine, description: str, *, reason: str | None = None
    ) -> Machine:
        return await self.ctx.status.write(
            machine, Operation(description, STATE_PROCESSING, OPERATION_DELETE), reason=reason
        )

    async def failed(
        self, machine: Machine, description: str, reason: str, code: str = ""
    ) -> Machine:
        return await self.ctx.status.write(
            machine,
            Operation(description, STATE_FAILED, OPERATION_DELETE, code),
            reason=reason,
        )


Step = Callable[[Deletion, Machine], Awaitable[tuple[Machine | None, float | None]]]


async def delete(
    ctx: MachineContext,
    machine: Machine,
    machine_class: MachineClass,
    data: SecretData,
    options: MachineOptions,
) -> float | None:
    """Run the deletion flow as far as it goes now; when to look again (None: finished)."""
    if FINALIZER not in machine.metadata.finalizers:
        log.warning("machine is missing finalizers, deletion cannot proceed", machine=machine.name)
        return LongRetry
    flow = Deletion(ctx, machine_class, data, options)
    if machine.phase != PHASE_TERMINATING:
        was_failed = machine.phase == PHASE_FAILED
        machine = await ctx.status.write(
            machine,
            Operation(GET_VM_STATUS, STATE_PROCESSING, OPERATION_DELETE),
            phase=PHASE_TERMINATING,
            timeout_active=False,
            reason="Terminating",
        )
        await mark_node_terminating(flow, machine, unhealthy=was_failed)
    held = provider_hold(machine)
    if held is not None:
        return held
    current: Machine | None = machine
    while current is not None:
        step = deletion_step(current.status.last_operation.description)
        if step is None:  # a description no step recognises: start the flow over
            current = await flow.step_to(current, GET_VM_STATUS)
            continue
        current, retry = await STEPS[step](flow, current)
        if retry is not None:
            return retry
    return None


def provider_retry(step: str, code: Code) -> float:
    """How long a failed provider call holds its step: MCM's ShortRetry for a transient
    error, longer for one that will not clear soon (a provider answering Internal is not
    asked again for ten minutes)."""
    if code in TRANSIENT_CODES:
        return ShortRetry
    return MediumRetry if step == GET_VM_STATUS else LongRetry


def provider_hold(machine: Machine) -> float | None:
    """What is left of the hold a failed provider call recorded on the machine, or None when
    the step may run now. A pass woken for another reason (a hand-over, a node event) must not
    call the provider again before then. Read from the status, so a new manager keeps the
    hold too; the stamp's one-second resolution may end it up to a second early."""
    last = machine.status.last_operation
    step = deletion_step(last.description)
    if last.state != STATE_FAILED or step not in (GET_VM_STATUS, INITIATE_VM_DELETION):
        return None
    code = Code.__members__.get(last.error_code)
    elapsed = seconds_since(parse_time(last.last_update_time))
    if code is None or elapsed is None:
        return None
    left = provider_retry(step, code) - elapsed
    return left if left > 0 else None


async def get_vm_status(flow: Deletion, machine: Machine) -> tuple[Machine | None, float | None]:
    """MCM master's ``updateMachineStatusAndNodeLabel``: the drain needs the node label, so a
    machine without one (its creation's label write lost to this very deletion, say) learns
    its node from the provider first; a machine with one goes straight to the drain."""
    if machine.metadata.labels.get(NODE_LABEL):
        return await flow.step_to(machine, INITIATE_DRAIN), None
    driver = flow.ctx.drivers.for_class(flow.machine_class)
    try:
        vm = await driver.get_machine_status(machine, flow.machine_class, flow.data)
    except MachineError as error:
        if error.code == Code.Unimplemented:
            description = INITIATE_DRAIN
        elif error.code == Code.NotFound:
            # Still drain and still ask for deletion: a VM the provider cannot find may
            # leave disks and NICs that only DeleteMachine cleans up.
            description = (
                f"VM was not found at provider. Moving forward to node drain. {INITIATE_DRAIN}"
            )
        elif error.code == Code.Uninitialized:
            description = (
                f"VM instance was not initialized. Moving forward to node drain. {INITIATE_DRAIN}"
            )
        else:
            transient = error.code in TRANSIENT_CODES
            description = (
                "Error occurred with decoding machine error status while getting VM status, "
                + (
                    "aborting with retry. "
                    if transient
                    else f"aborting without retry. machine code: {error} "
                )
                + GET_VM_STATUS
            )
            failed = await flow.failed(machine, description, "GetVMStatusFailed", error.code.name)
            return failed, provider_retry(GET_VM_STATUS, error.code)
        return await flow.step_to(machine, description), None
    if vm.node_name and _may_adopt(flow, vm.node_name, vm.provider_id):
        machine = await flow.ctx.client.patch(
            Machine,
            machine.name,
            {
                "metadata": {
                    "resourceVersion": machine.metadata.resource_version,
                    "labels": {NODE_LABEL: vm.node_name},
                }
            },
            namespace=machine.namespace,
        )
    return await flow.step_to(machine, INITIATE_DRAIN), None


def _may_adopt(flow: Deletion, node_name: str, provider_id: str) -> bool:
    """The VM's node is this machine's to drain and delete unless that Node is another VM's
    (a leftover of the same name, which the VM could not register over)."""
    node = flow.ctx.nodes.get("", node_name)
    theirs = node.spec.provider_id if node is not None else ""
    return not (theirs and provider_id and not same_vm(theirs, provider_id))


def force_reason(flow: Deletion, machine: Machine, node: Node) -> str | None:
    """Why the drain must be forced, or None for a gentle one."""
    label = machine.metadata.labels.get(FORCE_DELETION_LABEL)
    if label in _TRUE_VALUES:
        return f"the {FORCE_DELETION_LABEL} label is set"
    elapsed = seconds_since(parse_time(machine.metadata.deletion_timestamp)) or 0.0
    if elapsed >= flow.options.drain_timeout:
        return f"the drain timeout ({flow.options.drain_timeout:g}s) has passed"
    for kind, healthy_status in (("Ready", "True"), ("ReadonlyFilesystem", "False")):
        condition = node.condition(kind)
        if condition is None or condition.status == healthy_status:
            continue
        since = seconds_since(parse_time(condition.last_transition_time))
        if since is not None and since >= UNHEALTHY_NODE_FORCE_AFTER:
            return f"node condition {kind} has been {condition.status} for {since:.0f}s"
    return None


async def drain(flow: Deletion, machine: Machine) -> tuple[Machine | None, float | None]:
    ctx = flow.ctx
    node_name = flow.node_name(machine)
    if not node_name:
        next_step = (
            f"Skipping drain as nodeName is not a valid one for machine. {INITIATE_VM_DELETION}"
        )
        return await flow.step_to(machine, next_step), None
    node = ctx.nodes.get("", node_name)
    if node is None:
        next_step = f"Skipping drain as node object does not exist. {INITIATE_VM_DELETION}"
        return await flow.step_to(machine, next_step), None
    # The labels as the cache has them now: this pass's copy may predate a force-deletion label.
    latest = ctx.machines.get(machine.namespace, machine.name) or machine
    forced_by = force_reason(flow, latest, node)
    options = flow.options
    if forced_by is None:
        elapsed = seconds_since(parse_time(machine.metadata.deletion_timestamp)) or 0.0
        drain_options = DrainOptions(
            timeout=max(1.0, options.drain_timeout - elapsed),
            max_evict_retries=options.evict_retries,
            pv_detach_timeout=options.pv_detach_timeout,
            pv_reattach_timeout=options.pv_reattach_timeout,
            eviction_supported=await ctx.eviction_supported(),
        )
    else:
        log.info("forcing drain", machine=machine.name, node=node_name, reason=forced_by)
        drain_options = DrainOptions(
            timeout=FORCE_DRAIN_TIMEOUT,
            max_evict_retries=1,
            force=True,
            eviction_supported=await ctx.eviction_supported(),
        )
    try:
        if flow.written_node is None:
            await mark_node_terminating(flow, machine, unhealthy=None)
    except ApiError as error:
        if forced_by is None:
            description = (
                f"Drain failed due to failure in update of node conditions - {error}. "
                f"Will retry in next sync. {INITIATE_DRAIN}"
            )
            return await flow.failed(machine, description, "DrainFailed"), ShortRetry
    started, began = time.perf_counter(), trio.current_time()
    if forced_by is None:
        result = await _drain_unless_forced(flow, machine, node_name, drain_options)
        if result is None:  # a reason to force came up meanwhile: drain again, by force
            return machine, None
    else:
        result = await ctx.drainer.drain(node_name, drain_options, node=flow.written_node)
    ctx.metrics.drain.observe(time.perf_counter() - started)
    if result.succeeded:
        ctx.durations.observe("drain", machine, trio.current_time() - began)
        if forced_by is not None:
            description = f"Force Drain successful. {DELETE_VOLUME_ATTACHMENTS}"
        else:
            description = f"Drain successful. {INITIATE_VM_DELETION}"
        return await flow.step_to(machine, description, reason="Drained"), None
    if forced_by is not None:
        description = (
            f"Drain failed due to - {result.summary()}. However, since it's a force deletion "
            f"shall continue deletion of VM. {DELETE_VOLUME_ATTACHMENTS}"
        )
        return await flow.step_to(machine, description, reason="ForceDrainFailed"), None
    description = (
        f"Drain failed due to - {result.summary()}. Will retry in next sync. {INITIATE_DRAIN}"
    )
    return await flow.failed(machine, description, "DrainFailed"), ShortRetry


async def _drain_unless_forced(
    flow: Deletion, machine: Machine, node_name: str, options: DrainOptions
) -> DrainResult | None:
    """A gentle drain that gives way as soon as it should be forced (the force-deletion label
    set, the node unhealthy for five minutes), instead of holding out until the drain timeout;
    None when it gave way."""
    result: DrainResult | None = None
    async with trio.open_nursery() as nursery:

        async def drain() -> None:
            nonlocal result
            result = await flow.ctx.drainer.drain(node_name, options, node=flow.written_node)
            nursery.cancel_scope.cancel()

        async def until_forced() -> None:
            reason = await _forced(flow, machine, node_name)
            log.info("drain to be forced", machine=machine.name, node=node_name, reason=reason)
            nursery.cancel_scope.cancel()

        nursery.start_soon(drain)
        nursery.start_soon(until_forced)
    return result


async def _forced(flow: Deletion, machine: Machine, node_name: str) -> str:
    """Waits until the cached machine and node call for a forced drain; the reason."""
    ctx = flow.ctx
    watched = (ctx.machine_changes, ctx.drainer.cache.node_changes)
    while True:
        # Registered before the check: a change applied between the check and the wait wakes it.
        with any_change(watched) as changed:
            current = ctx.machines.get(machine.namespace, machine.name) or machine
            node = ctx.nodes.get("", node_name)
            if node is not None:
                reason = force_reason(flow, current, node)
                if reason is not None:
                    return reason
            # Nothing changes for five minutes of NotReady but the clock: wake then too.
            with trio.move_on_at(_next_force_time(node)):
                await changed.wait()


def _next_force_time(node: Node | None) -> float:
    """The trio time at which an unhealthy node condition reaches five minutes (inf: none)."""
    soonest = math.inf
    for kind, healthy_status in (("Ready", "True"), ("ReadonlyFilesystem", "False")):
        condition = node.condition(kind) if node is not None else None
        if condition is None or condition.status == healthy_status:
            continue
        since = seconds_since(parse_time(condition.last_transition_time))
        if since is not None:
            soonest = min(soonest, trio.current_time() + UNHEALTHY_NODE_FORCE_AFTER - since + 1)
    return soonest


async def delete_volume_attachments(
    flow: Deletion, machine: Machine
) -> tuple[Machine | None, float | None]:
    ctx = flow.ctx
    node_name = flow.node_name(machine)
    node = ctx.nodes.get("", node_name) if node_name else None
    if node is None:
        description = (
            f"Skipping deleteNodeVolAttachments due to - node {go_quote(node_name)} not found. "
            f"Moving to VM Deletion. {INITIATE_VM_DELETION}"
        )
    elif not node.status.volumes_attached:
        description = (
            f"Node Volumes for node: {node_name} are already detached. Moving to VM Deletion. "
            f"{INITIATE_VM_DELETION}"
        )
    else:
        live = [
            attachment
            for attachment in ctx.attachments.by_index(ATTACHMENT_NODE_INDEX, node_name)
            if not attachment.deleting
        ]
        if live:
            for attachment in live:
                await ctx.target.delete(VolumeAttachment, attachment.name, missing_ok=True)
            # Their deletion events wake this machine; the retry is only a safety net.
            return machine, ShortRetry
        description = f"No Live VolumeAttachments for node: {node_name}. {INITIATE_VM_DELETION}"
    return await flow.step_to(machine, description), None


async def delete_vm(flow: Deletion, machine: Machine) -> tuple[Machine | None, float | None]:
    ctx = flow.ctx
    driver = ctx.drivers.for_class(flow.machine_class)
    last_known_state: str | None = None
    try:
        last_known_state = await driver.delete_machine(machine, flow.machine_class, flow.data)
        description = f"VM deletion was successful. {INITIATE_NODE_DELETION}"
        took = seconds_since(parse_time(machine.metadata.deletion_timestamp))
        if took is not None:
            ctx.durations.observe("delete", machine, took)
    except MachineError as error:
        if error.code != Code.NotFound:
            description = (
                f"VM deletion failed due to - {error}. However, will re-try in the next resync. "
                f"{INITIATE_VM_DELETION}"
            )
            failed = await flow.failed(machine, description, "VMDeletionFailed", error.code.name)
            return failed, provider_retry(INITIATE_VM_DELETION, error.code)
        description = f"VM not found. Continuing deletion flow. {INITIATE_NODE_DELETION}"
    # A machine that never joined still has its bootstrap token (a credential that lets a node
    # join): it must not outlive the VM. Asked of the API, not the cache, which may not show a
    # token made by the last creation attempt yet; a missing one is fine.
    token = token_secret_name(machine.name, machine.namespace)
    await ctx.target.delete(Secret, token, namespace=TOKEN_NAMESPACE, missing_ok=True)
    written = await ctx.status.write(
        machine,
        Operation(description, STATE_PROCESSING, OPERATION_DELETE),
        last_known_state=last_known_state or None,
        reason="VMDeleted",
    )
    return written, None


async def delete_node(flow: Deletion, machine: Machine) -> tuple[Machine | None, float | None]:
    node_name = flow.node_name(machine)
    if not node_name:
        return await flow.step_to(machine, f"No node to delete. {INITIATE_FINALIZER_REMOVAL}"), None
    cached = flow.ctx.nodes.get("", node_name)
    if cached is not None and not _own_node(machine, cached):
        description = (
            f"Node {go_quote(node_name)} belongs to VM {go_quote(cached.spec.provider_id)}, "
            f"not this machine's: left alone. {INITIATE_FINALIZER_REMOVAL}"
        )
        return await flow.step_to(machine, description, reason="NodeKept"), None
    if cached is not None:
        try:
            await release_node(flow.ctx, cached)
        except ApiError as error:
            description = (
                f"Removal of finalizers from Node Object {go_quote(node_name)} failed due to "
                f"error: {error}, Retrying. {INITIATE_NODE_DELETION}"
            )
            return await flow.failed(machine, description, "NodeDeletionFailed"), ShortRetry
    try:
        # A repeated deletion that did land answers 404, handled below.
        await retry_transient(flow.ctx.target.delete, Node, node_name)
        node = go_quote(node_name)
        description = f"Deletion of Node Object {node} is successful. {INITIATE_FINALIZER_REMOVAL}"
    except ApiError as error:
        if error.status != 404:
            description = (
                f"Deletion of Node Object {go_quote(node_name)} failed due to error: {error}. "
                f"{INITIATE_NODE_DELETION}"
            )
            return await flow.failed(machine, description, "NodeDeletionFailed"), ShortRetry
        description = (
            f"No node object found for {go_quote(node_name)}, continuing deletion flow. "
            f"{INITIATE_FINALIZER_REMOVAL}"
        )
    return await flow.step_to(machine, description, reason="NodeDeleted"), None


def _own_node(machine: Machine, node: Node) -> bool:
    """A node this machine may delete: not one that carries another VM's providerID."""
    mine, theirs = machine.spec.provider_id, node.spec.provider_id
    return not (mine and theirs and not same_vm(mine, theirs))


async def remove_finalizer(flow: Deletion, machine: Machine) -> tuple[Machine | None, float | None]:
    if await finalizers.remove_finalizer(flow.ctx.client, machine, FINALIZER) is None:
        return None, None  # a pass on a stale cache: the finalizer went already
    took = seconds_since(parse_time(machine.metadata.deletion_timestamp))
    if took is not None and took >= 0:
        flow.ctx.metrics.delete.observe(took)
    log.info("machine deleted", machine=machine.name)
    return None, None


async def mark_node_terminating(
    flow: Deletion, machine: Machine, *, unhealthy: bool | None
) -> None:
    """The node's ``Terminating`` condition, so other components (autoscalers, storage) know
    this node is going. ``Unhealthy`` for a machine that had Failed, ``ScaleDown`` otherwise —
    MCM reads the phase after setting it to Terminating and so always writes ScaleDown. With
    ``unhealthy=None`` (a later step, the old phase gone) an existing condition is kept and a
    missing one judged by the node's health."""
    node_name = flow.node_name(machine)
    node = flow.ctx.nodes.get("", node_name) if node_name else None
    if node is None:
        return
    existing = node.condition(TERMINATING_CONDITION)
    if unhealthy is None:
        if existing is not None and existing.status == "True":
            return
        unhealthy = not is_healthy(node.status.conditions, flow.options.node_conditions)
    reason, message = (
        ("Unhealthy", "Machine Controller is terminating failed machine")
        if unhealthy
        else ("ScaleDown", "Machine Controller is scaling down machine")
    )
    if existing is not None and existing.status == "True" and existing.reason == reason:
        return
    # The same condition written twice is the same node: safe to repeat.
    written = await retry_transient(
        set_node_condition,
        flow.ctx.target,
        node_name,
        TERMINATING_CONDITION,
        status="True",
        reason=reason,
        message=message,
        heartbeat=True,
    )
    if written is not None:
        flow.written_node = written


STEPS: dict[str, Step] = {
    GET_VM_STATUS: get_vm_status,
    INITIATE_DRAIN: drain,
    DELETE_VOLUME_ATTACHMENTS: delete_volume_attachments,
    INITIATE_VM_DELETION: delete_vm,
    INITIATE_NODE_DELETION: delete_node,
    INITIATE_FINALIZER_REMOVAL: remove_finalizer,
}
