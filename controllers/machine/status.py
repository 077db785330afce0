"""A Machine's status as the controller writes it: MCM's vocabulary and a write that is skipped
when nothing would change.

Operators, dashboards and MCM's own tools read ``lastOperation.description`` to learn which step
a deletion is in (the deletion flow resumes from it after a restart), so the step markers are
MCM's exact strings and every description of a step ends with the marker of the step to run next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubetrio.api.machine import STATE_FAILED, Machine, MachineCondition
from kubetrio.api.meta import format_time
from kubetrio.runtime.client import Client
from kubetrio.runtime.clock import now
from kubetrio.runtime.events import EventRecorder

FINALIZER = "machine.sapcloud.io/machine-controller-manager"
NODE_LABEL = "node"
DEPLOYMENT_LABEL = "name"
PRIORITY_ANNOTATION = "machinepriority.machine.sapcloud.io"
DEFAULT_PRIORITY = "3"
FORCE_DELETION_LABEL = "force-deletion"

# Deletion steps, in order; a description ends with the marker of the step that runs next.
GET_VM_STATUS = "Set machine status to termination. Now, getting VM Status"
INITIATE_DRAIN = "Initiate node drain"
DELETE_VOLUME_ATTACHMENTS = "Delete Volume Attachments"
INITIATE_VM_DELETION = "Initiate VM deletion"
INITIATE_NODE_DELETION = "Initiate node object deletion"
INITIATE_FINALIZER_REMOVAL = "Initiate machine object finalizer removal"
INITIALIZE_VM = "Initialize VM Instance"
DELETION_STEPS = (
    GET_VM_STATUS,
    INITIATE_DRAIN,
    DELETE_VOLUME_ATTACHMENTS,
    INITIATE_VM_DELETION,
    INITIATE_NODE_DELETION,
    INITIATE_FINALIZER_REMOVAL,
)


def deletion_step(description: str) -> str | None:
    """The deletion step a description hands over to: the marker it ends with. A marker
    anywhere else may be quoted user text (an error message, a validation problem) and must
    never send the flow to a later step; an unrecognised description restarts the flow."""
    for step in DELETION_STEPS:
        if description.endswith(step):
            return step
    return None


@dataclass(frozen=True, slots=True)
class Operation:
    """What ``lastOperation`` should say."""

    description: str
    state: str
    type: str
    error_code: str = ""


def _conditions_doc(conditions: Sequence[MachineCondition]) -> list[Any]:
    return [msgspec.to_builtins(c) for c in conditions]


def similar(machine: Machine, phase: str, timeout_active: bool, operation: Operation) -> bool:
    """MCM's ``isMachineStatusSimilar``: the same phase, timeout flag and operation (times
    aside) — writing it again would only churn watchers."""
    current = machine.status.current_status
    last = machine.status.last_operation
    return (
        current.phase == phase
        and current.timeout_active == timeout_active
        and last.description == operation.description
        and last.state == operation.state
        and last.type == operation.type
        and last.error_code == operation.error_code
    )


class StatusWriter:
    """Writes status with the resourceVersion read, so a decision made on a stale cache fails
    with a conflict (and is retried on fresh data) instead of overwriting newer progress."""

    def __init__(self, client: Client, events: EventRecorder | None = None) -> None:
        self.client = client
        self.events = events
        self._said: dict[tuple[str, str, str], str] = {}

    async def events_only(self, machine: Machine, kind: str, reason: str, message: str) -> None:
        """An Event without a status write, once per distinct message and machine."""
        key = (machine.namespace, machine.name, reason)
        if self.events is None or self._said.get(key) == message:
            return
        self._said[key] = message
        await self.events.record(machine, kind, reason, message)

    def forget(self, namespace: str, name: str) -> None:
        """A machine gone: what was said about it goes too."""
        for key in [k for k in self._said if k[:2] == (namespace, name)]:
            del self._said[key]

    async def write(
        self,
        machine: Machine,
        operation: Operation,
        *,
        phase: str | None = None,
        timeout_active: bool | None = None,
        conditions: Sequence[MachineCondition] | None = None,
        node: str | None = None,
        last_known_state: str | None = None,
        reason: str | None = None,
    ) -> Machine:
        """Set ``lastOperation`` (and the phase when given); returns the machine as written,
        or unchanged when the status already says all of it. With ``reason``, a write that
        changed the operation is also recorded as an Event (Warning when it failed), so events
        mark transitions and are never repeated by retries."""
        current = machine.status.current_status
        new_phase = current.phase if phase is None else phase
        new_timeout = current.timeout_active if timeout_active is None else timeout_active
        conditions_changed = conditions is not None and tuple(conditions) != tuple(
            machine.status.conditions
        )
        if (
            similar(machine, new_phase, new_timeout, operation)
            and not conditions_changed
            and (node is None or node == machine.status.node)
            and (last_known_state is None or last_known_state == machine.status.last_known_state)
        ):
            return machine
        stamp = format_time(now())
        # Every field spelt out: a merge patch keeps what it does not mention, and a stale
        # errorCode or timeoutActive must not survive into the new state (None deletes).
        status: dict[str, Any] = {
            "lastOperation": {
                "description": operation.description,
                "state": operation.state,
                "type": operation.type,
                "errorCode": operation.error_code or None,
                "lastUpdateTime": stamp,
            }
        }
        if new_phase != current.phase or new_timeout != current.timeout_active:
            # The phase's own clock: health and creation timeouts count from this instant.
            status["currentStatus"] = {
                "phase": new_phase,
                "timeoutActive": new_timeout,
                "lastUpdateTime": stamp,
            }
        if conditions_changed:
            assert conditions is not None
            status["conditions"] = _conditions_doc(conditions)
        if node is not None:
            status["node"] = node
        if last_known_state is not None:
            status["lastKnownState"] = last_known_state
        written = await self.client.patch_status(
            Machine,
            machine.name,
            {"metadata": {"resourceVersion": machine.metadata.resource_version}, "status": status},
            namespace=machine.namespace,
        )
        last = machine.status.last_operation
        changed = (last.description, last.state) != (operation.description, operation.state)
        if reason and self.events is not None and (changed or new_phase != current.phase):
            kind = "Warning" if operation.state == STATE_FAILED else "Normal"
            await self.events.record(written, kind, reason, operation.description)
        return written
