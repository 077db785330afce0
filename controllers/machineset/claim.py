"""Which machines a set owns: controller-runtime's / MCM's controller-ref manager.

A machine the set controls stays its own while it matches the selector; one that stops
matching is released (its controller reference removed) unless the set is being deleted. An
orphan that matches is adopted — but never by a set being deleted, which a live read of the
set confirms first, since the cache may not show the deletion yet. Machines controlled by
someone else, or being deleted, are never taken.

Owner references are rewritten whole with the resourceVersion read, so a concurrent change
fails the write (a conflict to retry) instead of being overwritten.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.api.meta import OwnerReference
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.labels import selector_matches
from kubetrio.runtime.util.log import get_logger
from kubetrio.runtime.util.ownerrefs import new_controller_ref

log = get_logger("kubetrio.machineset")

CanAdopt = Callable[[], Awaitable[str | None]]


def _refs(refs: Sequence[OwnerReference]) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(r) for r in refs]


async def _write_refs(client: Client, machine: Machine, refs: Sequence[OwnerReference]) -> None:
    await client.patch(
        Machine,
        machine.name,
        {
            "metadata": {
                "resourceVersion": machine.resource_version,
                "ownerReferences": _refs(refs) or None,
            }
        },
        namespace=machine.namespace,
    )


async def claim_machines(
    client: Client, ms: MachineSet, machines: Sequence[Machine], can_adopt: CanAdopt
) -> tuple[list[Machine], list[str]]:
    """The machines ``ms`` owns after adopting and releasing; errors as one line each (a
    machine that could not be adopted or released is left for the next pass)."""
    claimed: list[Machine] = []
    errors: list[str] = []
    deleting = ms.deleting
    refusal: str | None = None
    asked = False
    for machine in machines:
        matches = selector_matches(ms.spec.selector, machine.metadata.labels)
        ref = machine.metadata.controller_ref()
        if ref is not None:
            if ref.uid != ms.metadata.uid:
                continue
            if matches:
                claimed.append(machine)
                continue
            if deleting:
                continue
            others = [r for r in machine.metadata.owner_references if r.uid != ms.metadata.uid]
            try:
                await _write_refs(client, machine, others)
                log.info("machine released", machineset=ms.name, machine=machine.name)
            except ApiError as error:
                if error.status not in (404, 422):
                    errors.append(f"releasing machine {machine.name}: {error}")
            continue
        if deleting or not matches or machine.deleting:
            continue
        if not asked:
            refusal, asked = await can_adopt(), True
        if refusal is not None:
            errors.append(f"can't adopt machine {machine.name}: {refusal}")
            continue
        try:
            await _write_refs(
                client, machine, [*machine.metadata.owner_references, new_controller_ref(ms)]
            )
        except ApiError as error:
            if error.status != 404:
                errors.append(f"adopting machine {machine.name}: {error}")
            continue
        log.info("machine adopted", machineset=ms.name, machine=machine.name)
        claimed.append(machine)
    return claimed, errors
