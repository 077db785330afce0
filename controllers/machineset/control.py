"""Creating and deleting a set's machines: MCM's ``MachineControl`` with its Events, the
slow-start batches of creations and the mark a deleted machine gets.

Creations go in batches of 1, 2, 4…: a set that cannot create (no quota, a rejected template)
finds out after one request, not a hundred, and one Event says why. A machine deleted by its
set is marked Terminating at once ("Deleting machine from cloud provider"), so the next pass
already counts its replacement as missing — unless the machine controller has started the
deletion flow in between, whose recorded step must not be overwritten.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from kubetrio.api.machine import (
    EFFECTIVE_CREATION_TIMEOUT_ANNOTATION,
    OPERATION_DELETE,
    OPERATION_HEALTH_CHECK,
    PHASE_FAILED,
    PHASE_TERMINATING,
    STATE_PROCESSING,
    Machine,
    parse_duration,
)
from kubetrio.api.machineset import MachineSet
from kubetrio.api.meta import format_time
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, PatchType
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.clock import now
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machineset")

SLOW_START_INITIAL_BATCH = 1
DELETING_DESCRIPTION = "Deleting machine from cloud provider"


def machine_from_template(ms: MachineSet, raw_template: dict[str, Any]) -> dict[str, Any]:
    """A new Machine from the set's template as stored (every field, also those the typed view
    leaves out), named ``<set>-<random>`` and controlled by the set."""
    meta = raw_template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "generateName": f"{ms.name}-",
        "namespace": ms.namespace,
        "labels": dict(meta.get("labels") or {}),
        "ownerReferences": [
            {
                "apiVersion": MachineSet.KIND.api_version,
                "kind": MachineSet.KIND.kind,
                "name": ms.name,
                "uid": ms.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    annotations = dict(meta.get("annotations") or {})
    spec = copy.deepcopy(raw_template.get("spec") or {})
    effective = ms.metadata.annotations.get(EFFECTIVE_CREATION_TIMEOUT_ANNOTATION)
    if effective is not None:
        # MCM main: the deployment's creation timeout goes onto each new machine, as the
        # annotation and as its creationTimeout (when it parses: a bad value is only logged).
        annotations[EFFECTIVE_CREATION_TIMEOUT_ANNOTATION] = effective
        try:
            parse_duration(effective)
        except ValueError:
            log.warning(
                "effective creation timeout is not a duration, not applied",
                machineset=ms.name,
                value=effective,
            )
        else:
            configuration = spec.get("machineConfiguration") or {}
            spec["machineConfiguration"] = {**configuration, "creationTimeout": effective}
    if annotations:
        metadata["annotations"] = annotations
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    return {
        "apiVersion": Machine.KIND.api_version,
        "kind": Machine.KIND.kind,
        "metadata": metadata,
        "spec": spec,
    }


async def slow_start(count: int, create: Callable[[], Awaitable[None]]) -> tuple[int, str | None]:
    """Call ``create`` ``count`` times in doubling concurrent batches, stopping after the first
    batch with a failure; (successes, first error)."""
    done = 0
    batch = min(count, SLOW_START_INITIAL_BATCH)
    failures: list[str] = []

    async def one() -> None:
        try:
            await create()
        except ApiError as error:
            failures.append(str(error))

    while batch > 0:
        async with trio.open_nursery() as nursery:
            for _ in range(batch):
                nursery.start_soon(one)
        done += batch - len(failures)
        if failures:
            return done, failures[0]
        count -= batch
        batch = min(2 * batch, count)
    return done, None


@dataclass
class MachineControl:
    client: Client
    events: EventRecorder
    on_stale_removed: Callable[[], None] = lambda: None

    async def create(self, ms: MachineSet, raw_template: dict[str, Any]) -> None:
        body = machine_from_template(ms, raw_template)
        if not body["metadata"]["labels"]:
            raise ApiError(422, "Invalid", "unable to create machines, no labels")
        try:
            created = await self.client.create(Machine, body, namespace=ms.namespace)
        except ApiError as error:
            if error.status == 504 or error.reason == "Timeout":
                return  # created but slow to answer: the informer will show it (client-go)
            self.events.record(ms, "Warning", "FailedCreate", f"Error creating: {error}")
            raise
        log.info("machine created", machineset=ms.name, machine=created.name)
        self.events.record(ms, "Normal", "SuccessfulCreate", f"Created Machine: {created.name}")

    async def delete(self, ms: MachineSet, machine: Machine) -> str | None:
        """Delete one machine and mark it Terminating; the error as one line, if any."""
        try:
            await self.client.delete(Machine, machine.name, namespace=machine.namespace)
        except ApiError as error:
            if error.status == 404:
                return None
            self.events.record(ms, "Warning", "FailedDelete", f"Error deleting: {error}")
            return f"unable to delete machines: {error}"
        if (
            machine.phase == PHASE_FAILED
            and machine.status.last_operation.type == OPERATION_HEALTH_CHECK
        ):
            self.on_stale_removed()
        self.events.record(ms, "Normal", "SuccessfulDelete", f"Deleted machine: {machine.name}")
        log.info("machine deleted", machineset=ms.name, machine=machine.name, phase=machine.phase)
        await self._mark_terminating(machine)
        return None

    async def _mark_terminating(self, machine: Machine) -> None:
        stamp = format_time(now())
        operation = {
            "description": DELETING_DESCRIPTION,
            "state": STATE_PROCESSING,
            "type": OPERATION_DELETE,
            "lastUpdateTime": stamp,
        }
        current = {"phase": PHASE_TERMINATING, "timeoutActive": False, "lastUpdateTime": stamp}
        seen = machine.status.last_operation.description
        patch: Any
        patch_type: PatchType
        if seen:
            # Only over the description we saw: a deletion step written meanwhile stays.
            patch = [
                {"op": "test", "path": "/status/lastOperation/description", "value": seen},
                {"op": "add", "path": "/status/lastOperation", "value": operation},
                {"op": "add", "path": "/status/currentStatus", "value": current},
            ]
            patch_type = "json"
        else:
            patch = {"status": {"lastOperation": operation, "currentStatus": current}}
            patch_type = "merge"
        try:
            await self.client.patch(
                Machine,
                machine.name,
                patch,
                namespace=machine.namespace,
                patch_type=patch_type,
                subresource="status",
            )
        except ApiError as error:
            if error.status not in (404, 409, 422):
                log.warning(
                    "could not mark machine terminating", machine=machine.name, error=str(error)
                )

    async def delete_all(self, ms: MachineSet, machines: Sequence[Machine]) -> dict[str, str]:
        """Delete machines concurrently (those not being deleted already); errors by name."""
        errors: dict[str, str] = {}

        async def one(machine: Machine) -> None:
            error = await self.delete(ms, machine)
            if error is not None:
                errors[machine.name] = error

        async with trio.open_nursery() as nursery:
            for machine in machines:
                if not machine.deleting:
                    nursery.start_soon(one, machine)
        return errors

    async def patch_spec(self, machine: Machine, ops: list[dict[str, Any]]) -> None:
        await self.client.patch(
            Machine,
            machine.name,
            [
                {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": machine.resource_version,
                },
                *ops,
            ],
            namespace=machine.namespace,
            patch_type="json",
        )
