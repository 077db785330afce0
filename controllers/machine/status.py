"""A Machine's status as the controller writes it: MCM's vocabulary and a write that is skipped
when nothing would change.

Operators, dashboards and MCM's own tools read ``lastOperation.description`` to learn which step
a deletion is in (the deletion flow resumes from it after a restart), so the step markers are
MCM's exact strings and every description of a step ends with the marker of the step to run next.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubetrio.api.machine import STATE_FAILED, Machine, MachineCondition
from kubetrio.api.meta import format_time, parse_time
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.clock import now, seconds_since

FINALIZER = "machine.sapcloud.io/machine-controller-manager"
NODE_LABEL = "node"
DEPLOYMENT_LABEL = "name"
PRIORITY_ANNOTATION = "machinepriority.machine.sapcloud.io"
# How long the machine took to join (a Go duration), set once it first runs.
JOIN_DURATION_ANNOTATION = "node.machine.sapcloud.io/machine-join-duration"
DEFAULT_PRIORITY = "3"
FORCE_DELETION_LABEL = "force-deletion"
# On a machine's Node: its deletion waits for the machine's (a Node deleted out from under a
# machine has the machine deleted and replaced, rather than left Unknown for the health timeout).
NODE_FINALIZER = "node.machine.sapcloud.io/machine-controller"
# On a Node no Machine accounts for; MCM leaves such nodes alone (no finalizer, no deletion).
NOT_MANAGED_ANNOTATION = "node.machine.sapcloud.io/not-managed-by-mcm"

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


# MCM's isMachineStatusSimilar: descriptions this alike are the same news (a provider error
# repeated with another request id), and a lastOperation this old is written again anyway.
SIMILARITY_THRESHOLD = 0.75
REFRESH_AFTER = 30 * 60.0


def similarity_ratio(a: str, b: str) -> float:
    """MCM's ``StringSimilarityRatio``: one minus the Levenshtein distance over the mean
    length, both counted in UTF-8 bytes as Go's strings are (NaN for two empty strings, as
    Go's 0/0; never "similar", which equal strings need not be). rapidfuzz is imported on the
    first comparison: a manager whose machines never fail does not hold it."""
    from rapidfuzz.distance import Levenshtein

    left, right = a.encode(), b.encode()
    mean = (len(left) + len(right)) / 2
    if mean == 0:
        return math.nan
    return 1.0 - Levenshtein.distance(left, right) / mean


def similar_descriptions(a: str, b: str) -> bool:
    """Equal, or alike above MCM's threshold while handing over to the same deletion step (the
    step marker is the deletion flow's state: two steps' texts are never the same news)."""
    if a == b:
        return True
    return similarity_ratio(a, b) > SIMILARITY_THRESHOLD and deletion_step(a) == deletion_step(b)


def similar(machine: Machine, phase: str, timeout_active: bool, operation: Operation) -> bool:
    """MCM's ``isMachineStatusSimilar``: the same phase and timeout flag, an operation alike
    (times aside, descriptions by ``similar_descriptions``) and not older than
    ``REFRESH_AFTER`` — writing it again would only churn watchers and repeat Events."""
    current = machine.status.current_status
    last = machine.status.last_operation
    age = seconds_since(parse_time(last.last_update_time))
    if age is None or age > REFRESH_AFTER:
        return False
    return (
        current.phase == phase
        and current.timeout_active == timeout_active
        and similar_descriptions(last.description, operation.description)
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
        # Per machine, the resourceVersions this writer's writes replaced since the cache last
        # showed one of them gone: a cache still showing one of them is behind these writes.
        self._replaced: dict[tuple[str, str], set[str]] = {}

    async def events_only(self, machine: Machine, kind: str, reason: str, message: str) -> None:
        """An Event without a status write, once per distinct message and machine."""
        key = (machine.namespace, machine.name, reason)
        if self.events is None or self._said.get(key) == message:
            return
        self._said[key] = message
        self.events.record(machine, kind, reason, message)

    def forget(self, namespace: str, name: str) -> None:
        """A machine gone: what was said about it goes too."""
        for key in [k for k in self._said if k[:2] == (namespace, name)]:
            del self._said[key]
        self._replaced.pop((namespace, name), None)

    def behind(self, cached: Machine) -> bool:
        """Whether ``cached`` is a version of the machine a write of this writer has replaced:
        the cache has not shown that write yet, and a pass acting on it would redo steps the
        write recorded as done, or as failed and held back for a retry delay."""
        key = (cached.namespace, cached.name)
        replaced = self._replaced.get(key)
        if replaced is None:
            return False
        if cached.metadata.resource_version in replaced:
            return True
        # The cache only moves forward: it has passed every version replaced so far.
        del self._replaced[key]
        return False

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
        written = await self.client.patch(
            Machine,
            machine.name,
            {"metadata": {"resourceVersion": machine.metadata.resource_version}, "status": status},
            namespace=machine.namespace,
            subresource="status",
        )
        replaced = self._replaced.setdefault((machine.namespace, machine.name), set())
        replaced.add(machine.metadata.resource_version)
        last = machine.status.last_operation
        # A refresh of the same news (a stale or noise-only rewrite) is no transition.
        changed = last.state != operation.state or not similar_descriptions(
            last.description, operation.description
        )
        if reason and self.events is not None and (changed or new_phase != current.phase):
            kind = "Warning" if operation.state == STATE_FAILED else "Normal"
            self.events.record(written, kind, reason, operation.description)
        return written
