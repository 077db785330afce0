"""The health flow of a created machine: its node's conditions decide Running or Unknown, and
a machine that never joins, or stays unhealthy too long, is marked Failed so it gets replaced.

Instead of MCM's one-minute re-checks, a machine waiting on a timeout is looked at again exactly
when the timeout passes (node changes wake it sooner), so Failed is written on time, not up to a
minute late.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import trio

from kubetrio.api.core import Node, NodeCondition, Secret
from kubetrio.api.machine import (
    ANNOTATION_MACHINE_UPDATE_FAILED_REASON,
    LABEL_NODE_UPDATE_RESULT,
    LABEL_VALUE_NODE_UPDATE_FAILED,
    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL,
    NODE_IN_PLACE_UPDATE,
    OPERATION_CREATE,
    OPERATION_HEALTH_CHECK,
    OPERATION_IN_PLACE_UPDATE,
    PHASE_FAILED,
    PHASE_IN_PLACE_UPDATE_FAILED,
    PHASE_IN_PLACE_UPDATE_SUCCESSFUL,
    PHASE_IN_PLACE_UPDATING,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_UNKNOWN,
    STATE_FAILED,
    STATE_PROCESSING,
    STATE_SUCCESSFUL,
    Machine,
    MachineCondition,
)
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.context import (
    CACHE_CATCH_UP,
    MACHINE_DEPLOYMENT_INDEX,
    MachineContext,
)
from kubetrio.controllers.machine.failing import (
    MAX_REPLACEMENTS,
    deployment_machines,
    deployment_of,
    replacements_in_progress,
)
from kubetrio.controllers.machine.health import is_healthy
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.retry import LongRetry, ShortRetry
from kubetrio.controllers.machine.status import JOIN_DURATION_ANNOTATION, NODE_LABEL, Operation
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.util.clock import seconds_since
from kubetrio.runtime.util.duration import Duration
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

CRITICAL_COMPONENTS_TAINT = "node.gardener.cloud/critical-components-not-ready"
# Status timestamps have one-second resolution: look again just after a timeout, not before.
TIMESTAMP_SLACK = 1.0


def machine_conditions(conditions: Sequence[NodeCondition]) -> tuple[MachineCondition, ...]:
    return tuple(
        MachineCondition(
            type=c.type,
            status=c.status,
            reason=c.reason,
            message=c.message,
            last_transition_time=c.last_transition_time,
            last_heartbeat_time=c.last_heartbeat_time,
        )
        for c in conditions
    )


def _compared(c: MachineCondition) -> tuple[str, str, str]:
    # The in-place condition's steps all have status True: its reason is what moves.
    return (c.type, c.status, c.reason if c.type == NODE_IN_PLACE_UPDATE else "")


def conditions_differ(
    machine: Sequence[MachineCondition], node: Sequence[MachineCondition]
) -> bool:
    """MCM copies when the count or any status (by position) differs, or the in-place
    condition's reason; heartbeats alone do not count, or every kubelet heartbeat would
    rewrite every machine."""
    return len(machine) != len(node) or any(
        _compared(a) != _compared(b) for a, b in zip(machine, node, strict=True)
    )


def describe(conditions: Sequence[MachineCondition], watched: Sequence[str]) -> str:
    """The conditions that make the node unhealthy (the healthy ones would only hide them)."""
    bad = [
        f"{c.type}={c.status}"
        for c in conditions
        if (c.type == "Ready" and c.status != "True") or (c.type in watched and c.status != "False")
    ]
    if not any(c.type == "Ready" for c in conditions):
        bad.insert(0, "Ready missing")
    return ", ".join(bad)


def _critical_components_pending(node: Node) -> bool:
    return any(
        t.key == CRITICAL_COMPONENTS_TAINT and t.effect == "NoSchedule" for t in node.spec.taints
    )


async def check_health(
    ctx: MachineContext, machine: Machine, options: MachineOptions
) -> tuple[Machine, float]:
    node_name = machine.metadata.labels.get(NODE_LABEL, "")
    node = ctx.nodes.get("", node_name)
    phase = machine.phase
    name = machine.name
    operation: Operation | None = None
    new_phase: str | None = None
    conditions: tuple[MachineCondition, ...] | None = None
    reason = ""
    joined: float | None = None
    if node is None:
        if machine.status.conditions and phase == PHASE_RUNNING:
            new_phase, reason = PHASE_UNKNOWN, "NodeMissing"
            operation = Operation(
                f"Node object went missing. Machine {name} is unhealthy - changing MachineState "
                "to Unknown",
                STATE_PROCESSING,
                OPERATION_HEALTH_CHECK,
            )
    else:
        from_node = machine_conditions(node.status.conditions)
        if conditions_differ(machine.status.conditions, from_node):
            conditions = from_node
        current = conditions if conditions is not None else machine.status.conditions
        healthy = is_healthy(current, options.node_conditions)
        if phase in (PHASE_IN_PLACE_UPDATING, PHASE_IN_PLACE_UPDATE_FAILED):
            # Mid-update (or after a failed one) the node's health says nothing certain.
            pass
        elif healthy and phase != PHASE_RUNNING:
            if not (phase == PHASE_PENDING and _critical_components_pending(node)):
                new_phase = PHASE_RUNNING
                operation, reason, joined = await _joined(ctx, machine)
        elif not healthy and phase == PHASE_RUNNING:
            new_phase, reason = PHASE_UNKNOWN, "Unhealthy"
            operation = Operation(
                f"Machine {name} is unhealthy - changing MachineState to Unknown. "
                f"Node conditions: {describe(current, options.node_conditions)}",
                STATE_PROCESSING,
                OPERATION_HEALTH_CHECK,
            )
    retry = LongRetry
    if node is not None and phase in (PHASE_IN_PLACE_UPDATING, PHASE_IN_PLACE_UPDATE_FAILED):
        # MCM waits for a pass without copied conditions; the two go in one write here.
        verdict = _update_verdict(machine, node)
        if verdict is not None:
            new_phase, operation = verdict
            reason = new_phase
    if new_phase is None and phase in (
        PHASE_PENDING,
        PHASE_UNKNOWN,
        PHASE_IN_PLACE_UPDATING,
        PHASE_IN_PLACE_UPDATE_FAILED,
    ):
        outcome = await _check_timeouts(ctx, machine, options)
        if isinstance(outcome, float):
            retry = outcome
        elif outcome.type == OPERATION_IN_PLACE_UPDATE:
            new_phase, operation, reason = (
                PHASE_IN_PLACE_UPDATE_FAILED,
                outcome,
                PHASE_IN_PLACE_UPDATE_FAILED,
            )
        else:
            new_phase, operation, reason = PHASE_FAILED, outcome, "Failed"
    if operation is None and conditions is None:
        return machine, retry
    if (
        new_phase == PHASE_FAILED
        and operation is not None
        and operation.type == OPERATION_HEALTH_CHECK
    ):
        marked = await _mark_failed(ctx, machine, operation, conditions)
        return (marked, retry) if marked is not None else (machine, ShortRetry)
    machine = await ctx.status.write(
        machine,
        operation or _unchanged(machine),
        phase=new_phase,
        timeout_active=None if new_phase is None else new_phase in (PHASE_PENDING, PHASE_UNKNOWN),
        conditions=conditions,
        reason=reason or None,
    )
    if joined is not None:
        machine = await _annotate_join(ctx, machine, joined)
    if new_phase == PHASE_FAILED and phase == PHASE_PENDING:
        ctx.durations.failed_to_join(machine)
    if new_phase == PHASE_UNKNOWN:  # the health timeout starts now
        retry = min(LongRetry, options.health_timeout + TIMESTAMP_SLACK)
    elif new_phase == PHASE_IN_PLACE_UPDATE_SUCCESSFUL:
        retry = ShortRetry  # back to Running once the node's condition is copied
    elif new_phase == PHASE_IN_PLACE_UPDATE_FAILED:  # replaced if it stays so
        retry = min(LongRetry, options.health_timeout + TIMESTAMP_SLACK)
    return machine, retry


async def _annotate_join(ctx: MachineContext, machine: Machine, joined: float) -> Machine:
    """MCM's ``machine-join-duration`` annotation: how long the machine took to join, for
    diagnosis (a Go duration)."""
    patch = {"metadata": {"annotations": {JOIN_DURATION_ANNOTATION: str(Duration(joined))}}}
    try:
        return await ctx.client.patch(Machine, machine.name, patch, namespace=machine.namespace)
    except ApiError as error:
        if error.status != 404:
            raise
        return machine


def _update_verdict(machine: Machine, node: Node) -> tuple[str, Operation] | None:
    """The agent's ``update-result`` label, as the machine's phase (MCM's health check)."""
    result = node.metadata.labels.get(LABEL_NODE_UPDATE_RESULT)
    phase = machine.phase
    if result == LABEL_VALUE_NODE_UPDATE_SUCCESSFUL and phase != PHASE_IN_PLACE_UPDATE_SUCCESSFUL:
        return PHASE_IN_PLACE_UPDATE_SUCCESSFUL, Operation(
            f"Machine {machine.name} successfully updated dependencies",
            STATE_SUCCESSFUL,
            OPERATION_IN_PLACE_UPDATE,
        )
    if result == LABEL_VALUE_NODE_UPDATE_FAILED and phase != PHASE_IN_PLACE_UPDATE_FAILED:
        why = node.metadata.annotations.get(ANNOTATION_MACHINE_UPDATE_FAILED_REASON, "")
        return PHASE_IN_PLACE_UPDATE_FAILED, Operation(
            f"Machine {machine.name} failed to update dependencies: {why}",
            STATE_FAILED,
            OPERATION_IN_PLACE_UPDATE,
        )
    return None


def _unchanged(machine: Machine) -> Operation:
    last = machine.status.last_operation
    return Operation(last.description, last.state, last.type, last.error_code)


async def _joined(ctx: MachineContext, machine: Machine) -> tuple[Operation, str, float | None]:
    if machine.phase == PHASE_PENDING:
        # First join: the bootstrap token has served its purpose and must not outlive it.
        await ctx.target.delete(
            Secret,
            token_secret_name(machine.name, machine.namespace),
            namespace=TOKEN_NAMESPACE,
            missing_ok=True,
        )
        joined = seconds_since(parse_time(machine.metadata.creation_timestamp))
        if joined is not None:
            joined = max(0.0, joined)
            ctx.metrics.join.observe(joined)
            ctx.durations.observe("join", machine, joined)
        took = f" in {Duration(joined)}" if joined is not None else ""
        return (
            Operation(
                f"Machine {machine.name} successfully joined the cluster{took}",
                STATE_SUCCESSFUL,
                OPERATION_CREATE,
            ),
            "Joined",
            joined,
        )
    return (
        Operation(
            f"Machine {machine.name} successfully re-joined the cluster",
            STATE_SUCCESSFUL,
            OPERATION_HEALTH_CHECK,
        ),
        "Recovered",
        None,
    )


async def _check_timeouts(
    ctx: MachineContext, machine: Machine, options: MachineOptions
) -> Operation | float:
    """The Failed operation when a Pending or Unknown machine ran out of time, else the
    seconds until it will."""
    if machine.phase == PHASE_PENDING:
        # Counted from creation (MCM master), so a crash loop cannot buy a fresh 20 minutes.
        since = parse_time(machine.metadata.creation_timestamp)
        timeout = options.creation_timeout
    elif machine.phase == PHASE_IN_PLACE_UPDATING:
        since = parse_time(machine.status.current_status.last_update_time)
        timeout = options.in_place_update_timeout
    else:
        since = parse_time(machine.status.current_status.last_update_time)
        timeout = options.health_timeout
    elapsed = seconds_since(since) or 0.0
    if elapsed < timeout:
        return min(LongRetry, math.ceil(timeout - elapsed) + TIMESTAMP_SLACK)
    minutes = f"{timeout / 60:g}"
    if machine.phase == PHASE_IN_PLACE_UPDATING:
        return Operation(
            f"Machine {machine.name} failed to in-place update in {minutes} minutes.",
            STATE_FAILED,
            OPERATION_IN_PLACE_UPDATE,
        )
    if machine.phase == PHASE_PENDING:
        return Operation(
            f"Machine {machine.name} failed to join the cluster in {minutes} minutes.",
            STATE_FAILED,
            OPERATION_CREATE,
        )
    return Operation(
        f"Machine {machine.name} is not healthy since {minutes} minutes. Changing status to "
        f"failed. Node Conditions: {describe(machine.status.conditions, options.node_conditions)}",
        STATE_FAILED,
        OPERATION_HEALTH_CHECK,
    )


async def _mark_failed(
    ctx: MachineContext,
    machine: Machine,
    operation: Operation,
    conditions: tuple[MachineCondition, ...] | None,
) -> Machine | None:
    """Failed, unless another machine of the same deployment is already being replaced
    (then None: try again shortly)."""
    deployment = deployment_of(machine, ctx.sets)
    if not deployment:
        return await _write_failed(ctx, machine, operation, conditions)
    async with ctx.permits.hold(deployment) as acquired:
        if not acquired:
            log.info("timed out waiting to acquire lock", machine=machine.name)
            return None
        labelled = ctx.machines.by_index(MACHINE_DEPLOYMENT_INDEX, deployment)
        siblings = deployment_machines(
            deployment, machine.namespace, ctx.machines, ctx.sets, labelled
        )
        others = [m for m in siblings if m.name != machine.name]
        if replacements_in_progress(others) >= MAX_REPLACEMENTS:
            log.info(
                "machine couldn't be marked FAILED, other machines are getting replaced",
                machine=machine.name,
                deployment=deployment,
            )
            return None
        written = await _write_failed(ctx, machine, operation, conditions)
        # Hold the permit until the cache shows the write, or a sibling's count would miss it.
        await ctx.machine_changes.wait_until(
            lambda: _cached_phase(ctx, written) == PHASE_FAILED,
            trio.current_time() + CACHE_CATCH_UP,
        )
        return written


def _cached_phase(ctx: MachineContext, machine: Machine) -> str:
    cached = ctx.machines.get(machine.namespace, machine.name)
    return cached.phase if cached is not None else ""


async def _write_failed(
    ctx: MachineContext,
    machine: Machine,
    operation: Operation,
    conditions: tuple[MachineCondition, ...] | None,
) -> Machine:
    return await ctx.status.write(
        machine,
        operation,
        phase=PHASE_FAILED,
        timeout_active=False,
        conditions=conditions,
        reason="Failed",
    )
