"""Machine preservation (MCM v0.62, ``manageMachinePreservation``): a machine annotated
``node.machine.sapcloud.io/preserve`` — on its Node (preferred) or on itself — is kept with its
VM and node for diagnosis until ``status.currentStatus.preserveExpiryTime``
(``--machine-preserve-timeout``, 96h).

- ``now``: preserved at once, whatever its phase; ``when-failed``: only while Failed (a
  recovery ends it); ``auto-preserved``: written by MCM's MachineSet controller, ends on
  recovery too; ``false`` or no value: not preserved.
- A preserved node gets the cluster autoscaler's scale-down-disabled annotation and the
  ``Preserved`` condition. A preserved Failed machine's node is tainted
  ``node.machine.sapcloud.io/preserved:NoSchedule`` (not cordoned: a user's cordon stays the
  user's) and drained, DaemonSet pods staying; its MachineSet does not replace it. Should it
  recover, it is Running again and the taint goes.
- At expiry preservation stops and the annotation is removed, so it is not preserved again:
  a machine still Failed is then replaced.
- When both the node and the machine are annotated, the node's value wins: the machine's
  annotation is dropped and the node's value kept on the machine as the last one applied.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import msgspec

from kubetrio.api.core import Node, Taint
from kubetrio.api.machine import (
    LAST_APPLIED_NODE_PRESERVE_VALUE_ANNOTATION,
    NODE_PRESERVED,
    NODE_PRESERVED_TAINT,
    PHASE_FAILED,
    PHASE_RUNNING,
    PRESERVATION_STOPPED,
    PRESERVE_ANNOTATION,
    PRESERVE_AUTO_PRESERVED,
    PRESERVE_FALSE,
    PRESERVE_NOW,
    PRESERVE_VALUES,
    PRESERVE_WHEN_FAILED,
    PRESERVED_BY_MCM,
    PRESERVED_BY_USER,
    PRESERVED_NODE_DRAIN_SUCCESSFUL,
    PRESERVED_NODE_DRAIN_UNSUCCESSFUL,
    Machine,
)
from kubetrio.api.machineset import (
    AUTOSCALER_SCALE_DOWN_DISABLED_ANNOTATION,
    AUTOSCALER_SCALE_DOWN_DISABLED_BY_MCM_ANNOTATION,
    AUTOSCALER_SCALE_DOWN_DISABLED_VALUE,
)
from kubetrio.api.meta import format_time, parse_time
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.drain.drain import DrainOptions
from kubetrio.controllers.machine.inplace import FORCE_DRAIN_LABEL
from kubetrio.controllers.machine.nodeconditions import set_node_condition
from kubetrio.controllers.machine.options import (
    FORCE_DRAIN_TIMEOUT,
    UNHEALTHY_NODE_FORCE_AFTER,
    MachineOptions,
)
from kubetrio.controllers.machine.status import NODE_LABEL
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.util.clock import now, seconds_since
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

EXPIRY_SUFFIX = "Machine preserved until"


def expiry(machine: Machine) -> dt.datetime | None:
    return parse_time(machine.status.current_status.preserve_expiry_time)


def preserved(machine: Machine, at: dt.datetime) -> bool:
    """Preserved until a time still to come (MCM's MachineSet test)."""
    until = expiry(machine)
    return until is not None and until > at


def expired(machine: Machine, at: dt.datetime) -> bool:
    until = expiry(machine)
    return until is not None and until <= at


@dataclass(frozen=True, slots=True)
class PreserveState:
    """The annotations as MCM reads them (``getPreserveStateInfo``)."""

    node_found: bool
    node_annotated: bool
    node_value: str
    machine_annotated: bool
    machine_value: str
    last_applied: str
    expiry_set: bool

    @property
    def bound(self) -> bool:
        return (
            self.expiry_set
            or self.node_annotated
            or self.machine_annotated
            or self.last_applied != ""
        )

    @property
    def effective(self) -> str:
        """The node's word wins once it has spoken (even by removing its annotation)."""
        if not self.node_found:
            return self.machine_value
        if self.node_value == "" and self.last_applied == "":
            return self.machine_value
        return self.node_value


def preserve_state(machine: Machine, node: Node | None) -> PreserveState | None:
    """None when the node's annotation is invalid (MCM then leaves the machine alone)."""
    annotations = machine.metadata.annotations
    machine_value = annotations.get(PRESERVE_ANNOTATION)
    if machine_value is not None and machine_value not in PRESERVE_VALUES:
        log.warning("invalid preserve annotation on machine", machine=machine.name)
        machine_value = None
    node_value = node.metadata.annotations.get(PRESERVE_ANNOTATION) if node is not None else None
    if node_value is not None and node_value not in PRESERVE_VALUES:
        log.warning("invalid preserve annotation on node", machine=machine.name)
        return None
    return PreserveState(
        node_found=node is not None,
        node_annotated=node_value is not None,
        node_value=node_value or "",
        machine_annotated=machine_value is not None,
        machine_value=machine_value or "",
        last_applied=annotations.get(LAST_APPLIED_NODE_PRESERVE_VALUE_ANNOTATION, ""),
        expiry_set=expiry(machine) is not None,
    )


class Preservation:
    """One pass of MCM's ``manageMachinePreservation`` for one machine."""

    def __init__(self, ctx: MachineContext, machine: Machine, options: MachineOptions) -> None:
        self.ctx = ctx
        self.machine = machine
        self.options = options
        self.node_name = machine.metadata.labels.get(NODE_LABEL, "")

    def node(self) -> Node | None:
        return self.ctx.nodes.get("", self.node_name) if self.node_name else None

    async def run(self) -> tuple[Machine, float | None]:
        """The machine as written, and when to look again (the expiry), if preserved."""
        state = preserve_state(self.machine, self.node())
        if state is None or not state.bound:
            return self.machine, None
        moment = now()
        value = state.effective
        failed = self.machine.phase == PHASE_FAILED
        remove = False
        if value in ("", PRESERVE_FALSE):
            await self.stop(remove=False)
        elif value == PRESERVE_WHEN_FAILED:
            if expired(self.machine, moment):
                remove = True
                await self.stop(remove=True)
            elif not failed:
                await self.stop(remove=False)
            else:
                await self.preserve(value)
        elif value == PRESERVE_NOW:
            if expired(self.machine, moment):
                remove = True
                await self.stop(remove=True)
            else:
                await self.preserve(value)
        elif value == PRESERVE_AUTO_PRESERVED:
            if not failed or expired(self.machine, moment):
                remove = True
                await self.stop(remove=True)
            else:
                await self.preserve(value)
        node = self.node()
        if (
            expiry(self.machine) is not None
            and self.machine.phase == PHASE_RUNNING
            and node is not None
        ):
            await self._untaint(node)  # recovered: back in service while still preserved
        if not remove and self._annotations_to_sync(state):
            await self._record_node_value(state.node_value)
        until = expiry(self.machine)
        if until is None:
            return self.machine, None
        return self.machine, max(1.0, (until - now()).total_seconds() + 1.0)

    @staticmethod
    def _annotations_to_sync(state: PreserveState) -> bool:
        if not state.node_annotated and state.last_applied == "":
            return False  # the machine's own annotation rules
        return not (state.node_value == state.last_applied and not state.machine_annotated)

    # -- starting

    async def preserve(self, value: str) -> None:
        machine = self.machine
        if expiry(machine) is None:
            ends = now() + dt.timedelta(seconds=self.options.machine_preserve_timeout)
            await self._write_expiry(format_time(ends))
            log.info("machine preserved", machine=machine.name, until=format_time(ends))
        node = self.node()
        if node is None:
            return
        existing = node.condition(NODE_PRESERVED)
        drain = self.machine.phase == PHASE_FAILED and (
            existing is None or PRESERVED_NODE_DRAIN_SUCCESSFUL not in existing.message
        )
        if existing is not None and existing.status == "True" and not drain:
            return
        await self._patch_node(
            node,
            {
                "metadata": {
                    "annotations": {
                        AUTOSCALER_SCALE_DOWN_DISABLED_ANNOTATION: (
                            AUTOSCALER_SCALE_DOWN_DISABLED_VALUE
                        ),
                        AUTOSCALER_SCALE_DOWN_DISABLED_BY_MCM_ANNOTATION: (
                            AUTOSCALER_SCALE_DOWN_DISABLED_VALUE
                        ),
                    }
                }
            },
        )
        drained: bool | None = None
        if drain:
            drained = await self._drain(node)
        stamp = self.machine.status.current_status.preserve_expiry_time
        message = existing.message if existing is not None else ""
        status = existing.status if existing is not None else "False"
        changed = existing is None
        if self.machine.phase == PHASE_FAILED:
            if drained and PRESERVED_NODE_DRAIN_SUCCESSFUL not in message:
                message = f"{PRESERVED_NODE_DRAIN_SUCCESSFUL} {EXPIRY_SUFFIX} {stamp}."
                status, changed = "True", True
            elif not drained and PRESERVED_NODE_DRAIN_UNSUCCESSFUL not in message:
                message = f"{PRESERVED_NODE_DRAIN_UNSUCCESSFUL} {EXPIRY_SUFFIX} {stamp}."
                status, changed = "False", True
        elif status != "True":
            message = f"{EXPIRY_SUFFIX} {stamp}."
            status, changed = "True", True
        if changed:
            reason = PRESERVED_BY_MCM if value == PRESERVE_AUTO_PRESERVED else PRESERVED_BY_USER
            await self._set_condition(status, reason, message)

    async def _drain(self, node: Node) -> bool:
        """The preserved node's pods out (DaemonSet pods stay), behind its own taint."""
        forced = self._forced(node)
        options = self.options
        if forced:
            drain_options = DrainOptions(
                timeout=FORCE_DRAIN_TIMEOUT,
                max_evict_retries=1,
                force=True,
                eviction_supported=await self.ctx.eviction_supported(),
                cordon=False,
            )
        else:
            drain_options = DrainOptions(
                timeout=options.drain_timeout,
                max_evict_retries=options.evict_retries,
                pv_detach_timeout=options.pv_detach_timeout,
                pv_reattach_timeout=options.pv_reattach_timeout,
                eviction_supported=await self.ctx.eviction_supported(),
                cordon=False,
            )
        if not any(t.key == NODE_PRESERVED_TAINT for t in node.spec.taints):
            taint = Taint(key=NODE_PRESERVED_TAINT, effect="NoSchedule")
            node = await self._write_taints(node, [*node.spec.taints, taint]) or node
        result = await self.ctx.drainer.drain(node.name, drain_options, node=node)
        if not result.succeeded:
            log.warning(
                "drain of preserved node failed", machine=self.machine.name, error=result.summary()
            )
        return result.succeeded

    def _forced(self, node: Node) -> bool:
        machine = self.machine
        if machine.metadata.labels.get(FORCE_DRAIN_LABEL) == "True":
            return True
        failed_for = seconds_since(parse_time(machine.status.current_status.last_update_time))
        if failed_for is not None and failed_for > self.options.drain_timeout:
            return True
        for kind, healthy_status in (("Ready", "True"), ("ReadonlyFilesystem", "False")):
            condition = node.condition(kind)
            if condition is None or condition.status == healthy_status:
                continue
            since = seconds_since(parse_time(condition.last_transition_time))
            if since is not None and since > UNHEALTHY_NODE_FORCE_AFTER:
                return True
        return False

    # -- stopping

    async def stop(self, *, remove: bool) -> None:
        """MCM's ``stopPreservationIfActive``: nothing to do unless an expiry is set."""
        if expiry(self.machine) is None:
            return
        node = self.node()
        if node is not None:
            await self._set_condition("False", PRESERVATION_STOPPED, "")
            annotations: dict[str, Any] = {}
            if AUTOSCALER_SCALE_DOWN_DISABLED_BY_MCM_ANNOTATION in node.metadata.annotations:
                annotations[AUTOSCALER_SCALE_DOWN_DISABLED_ANNOTATION] = None
                annotations[AUTOSCALER_SCALE_DOWN_DISABLED_BY_MCM_ANNOTATION] = None
            if remove:
                annotations[PRESERVE_ANNOTATION] = None
            if annotations:
                await self._patch_node(node, {"metadata": {"annotations": annotations}})
        if remove:
            await self._patch_machine(
                {
                    "metadata": {
                        "annotations": {
                            PRESERVE_ANNOTATION: None,
                            LAST_APPLIED_NODE_PRESERVE_VALUE_ANNOTATION: None,
                        }
                    }
                }
            )
        node = self.node()
        if node is not None:
            await self._untaint(node)
        await self._write_expiry(None)
        log.info("machine preservation stopped", machine=self.machine.name)

    # -- writes

    async def _write_expiry(self, until: str | None) -> None:
        machine = self.machine
        patch = {
            "metadata": {"resourceVersion": machine.resource_version},
            "status": {
                "currentStatus": {
                    "preserveExpiryTime": until,
                    "lastUpdateTime": format_time(now()),
                }
            },
        }
        self.machine = await self.ctx.client.patch(
            Machine, machine.name, patch, namespace=machine.namespace, subresource="status"
        )

    async def _patch_machine(self, patch: dict[str, Any]) -> None:
        machine = self.machine
        self.machine = await self.ctx.client.patch(
            Machine, machine.name, patch, namespace=machine.namespace
        )

    async def _record_node_value(self, value: str) -> None:
        await self._patch_machine(
            {
                "metadata": {
                    "annotations": {
                        PRESERVE_ANNOTATION: None,
                        LAST_APPLIED_NODE_PRESERVE_VALUE_ANNOTATION: value,
                    }
                }
            }
        )

    async def _set_condition(self, status: str, reason: str, message: str) -> None:
        await set_node_condition(
            self.ctx.target,
            self.node_name,
            NODE_PRESERVED,
            status=status,
            reason=reason,
            message=message,
        )

    async def _untaint(self, node: Node) -> None:
        if any(t.key == NODE_PRESERVED_TAINT for t in node.spec.taints):
            await self._write_taints(
                node, [t for t in node.spec.taints if t.key != NODE_PRESERVED_TAINT]
            )

    async def _write_taints(self, node: Node, taints: list[Taint]) -> Node | None:
        value = [msgspec.to_builtins(t) for t in taints]
        return await self._patch_node(
            node,
            {"metadata": {"resourceVersion": node.resource_version}, "spec": {"taints": value}},
        )

    async def _patch_node(self, node: Node, patch: dict[str, Any]) -> Node | None:
        try:
            return await self.ctx.target.patch(Node, node.name, patch)
        except ApiError as error:
            if error.status != 404:
                raise
            return None
