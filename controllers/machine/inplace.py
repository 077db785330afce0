"""The machine controller's share of an in-place update (MCM's GEP-31): follow the node's
update labels with the ``InPlaceUpdate`` node condition, drain a node selected for update, and
hand it to the node's update agent.

The condition's reasons, in order: CandidateForUpdate (the deployment labelled the node a
candidate), SelectedForUpdate (selected: by the deployment, or by the user), DrainSuccessful
(this controller drained it; the machine goes ``InPlaceUpdating``), ReadyForUpdate (the agent
may start), then UpdateSuccessful or UpdateFailed as the agent's ``update-result`` label says.
The machine's phase follows the same label in the health check (``health_check``).
"""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.api.machine import (
    ANNOTATION_MACHINE_UPDATE_FAILED_REASON,
    CANDIDATE_FOR_UPDATE,
    DRAIN_SUCCESSFUL,
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
    LABEL_VALUE_NODE_UPDATE_FAILED,
    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL,
    NODE_IN_PLACE_UPDATE,
    OPERATION_IN_PLACE_UPDATE,
    PHASE_IN_PLACE_UPDATING,
    READY_FOR_UPDATE,
    SELECTED_FOR_UPDATE,
    STATE_PROCESSING,
    UPDATE_FAILED,
    UPDATE_SUCCESSFUL,
    Machine,
)
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.drain.drain import DrainOptions
from kubetrio.controllers.machine.nodeconditions import set_node_condition
from kubetrio.controllers.machine.options import (
    FORCE_DRAIN_TIMEOUT,
    UNHEALTHY_NODE_FORCE_AFTER,
    MachineOptions,
)
from kubetrio.controllers.machine.retry import MediumRetry, ShortRetry
from kubetrio.controllers.machine.status import NODE_LABEL, Operation
from kubetrio.runtime.util.clock import seconds_since
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

# MCM's markers in lastOperation descriptions.
INITIATE_DRAIN = "Initiate node drain"
OPERATION_DRAIN_NODE = "DrainNode"
# A machine labelled so is drained by force for its in-place update (MCM's spelling).
FORCE_DRAIN_LABEL = "force-drain"


def _reason(node: Node) -> str | None:
    condition = node.condition(NODE_IN_PLACE_UPDATE)
    return condition.reason if condition is not None else None


def next_condition(node: Node) -> tuple[str, str] | None:
    """MCM's ``updateNodeConditionBasedOnLabel``: the reason and message the node's labels call
    for, or None when the condition is as it should be."""
    labels = node.metadata.labels
    if LABEL_NODE_CANDIDATE_FOR_UPDATE not in labels:
        return None
    reason = _reason(node)
    if reason is None or (reason == UPDATE_SUCCESSFUL and LABEL_NODE_UPDATE_RESULT not in labels):
        # A new update (the last one's result label is gone).
        return CANDIDATE_FOR_UPDATE, "Node is a candidate for in-place update"
    if LABEL_NODE_SELECTED_FOR_UPDATE in labels:
        if reason == CANDIDATE_FOR_UPDATE:
            return SELECTED_FOR_UPDATE, "Node is selected for in-place update"
        if reason == SELECTED_FOR_UPDATE:
            return None  # not drained yet
    result = labels.get(LABEL_NODE_UPDATE_RESULT)
    if result == LABEL_VALUE_NODE_UPDATE_SUCCESSFUL and reason != UPDATE_SUCCESSFUL:
        return UPDATE_SUCCESSFUL, "Node in-place update successful"
    if result == LABEL_VALUE_NODE_UPDATE_FAILED and reason != UPDATE_FAILED:
        why = node.metadata.annotations.get(ANNOTATION_MACHINE_UPDATE_FAILED_REASON, "")
        return UPDATE_FAILED, f"Node in-place update failed: {why}"
    return None


async def set_condition(ctx: MachineContext, node: str, reason: str, message: str) -> Node | None:
    """The ``InPlaceUpdate`` condition (status True) on the node; None when the node is gone."""
    return await set_node_condition(
        ctx.target, node, NODE_IN_PLACE_UPDATE, status="True", reason=reason, message=message
    )


async def in_place_update(
    ctx: MachineContext, machine: Machine, options: MachineOptions
) -> tuple[Machine, float | None]:
    """One pass's in-place work; a retry delay ends the pass there (the node is with the agent,
    or the drain failed), None lets the pass go on."""
    name = machine.metadata.labels.get(NODE_LABEL, "")
    node = ctx.nodes.get("", name) if name else None
    if node is None:
        return machine, None
    wanted = next_condition(node)
    if wanted is not None:
        written = await set_condition(ctx, name, *wanted)
        if written is None:
            return machine, None
        node = written
    reason = _reason(node)
    if reason == SELECTED_FOR_UPDATE:
        machine, retry = await _drain_for_update(ctx, machine, node, options)
        if retry is not None:
            return machine, retry
        reason = DRAIN_SUCCESSFUL
    if reason == DRAIN_SUCCESSFUL:
        await set_condition(ctx, name, READY_FOR_UPDATE, "Node is ready for in-place update")
        reason = READY_FOR_UPDATE
    if reason == READY_FOR_UPDATE:
        # The agent's turn: its result label on the node brings the next pass.
        return machine, MediumRetry
    return machine, None


def _force_reason(machine: Machine, node: Node, options: MachineOptions) -> str | None:
    """MCM's ``drainNodeForInPlace``: the force-drain label, the drain timeout counted from
    the selection, or a node NotReady (read-only) for five minutes."""
    if machine.metadata.labels.get(FORCE_DRAIN_LABEL) == "True":
        return f"the {FORCE_DRAIN_LABEL} label is set"
    selected = node.condition(NODE_IN_PLACE_UPDATE)
    if selected is not None:
        since = seconds_since(parse_time(selected.last_transition_time))
        if since is not None and since > options.drain_timeout:
            return f"the drain timeout ({options.drain_timeout:g}s) has passed"
    for kind, healthy_status in (("Ready", "True"), ("ReadonlyFilesystem", "False")):
        condition = node.condition(kind)
        if condition is None or condition.status == healthy_status:
            continue
        since = seconds_since(parse_time(condition.last_transition_time))
        if since is not None and since > UNHEALTHY_NODE_FORCE_AFTER:
            return f"node condition {kind} has been {condition.status} for {since:.0f}s"
    return None


async def _drain_for_update(
    ctx: MachineContext, machine: Machine, node: Node, options: MachineOptions
) -> tuple[Machine, float | None]:
    forced_by = _force_reason(machine, node, options)
    if forced_by is None:
        drain_options = DrainOptions(
            timeout=options.drain_timeout,
            max_evict_retries=options.evict_retries,
            pv_detach_timeout=options.pv_detach_timeout,
            pv_reattach_timeout=options.pv_reattach_timeout,
            eviction_supported=await ctx.eviction_supported(),
        )
    else:
        log.info("forcing in-place drain", machine=machine.name, node=node.name, reason=forced_by)
        drain_options = DrainOptions(
            timeout=FORCE_DRAIN_TIMEOUT,
            max_evict_retries=1,
            force=True,
            eviction_supported=await ctx.eviction_supported(),
        )
    result = await ctx.drainer.drain(node.name, drain_options, node=node)
    if not result.succeeded:
        description = (
            f"Drain failed due to - {result.summary()}. Will retry in next sync. {INITIATE_DRAIN}"
        )
        written = await ctx.status.write(
            machine,
            Operation(description, STATE_PROCESSING, OPERATION_DRAIN_NODE),
            reason="DrainFailed",
        )
        return written, ShortRetry
    log.info("drained for in-place update", machine=machine.name, node=node.name)
    written = await ctx.status.write(
        machine,
        Operation(
            f"Machine {machine.name} is undergoing an in-place update",
            STATE_PROCESSING,
            OPERATION_IN_PLACE_UPDATE,
        ),
        phase=PHASE_IN_PLACE_UPDATING,
        timeout_active=False,
        reason="InPlaceUpdating",
    )
    await set_condition(ctx, node.name, DRAIN_SUCCESSFUL, "Node draining successful")
    return written, None
