"""MCM's auto-preservation of Failed machines (``manageAutoPreservationOfFailedMachines``): up to
``spec.autoPreserveFailedMachineMax`` Failed machines of a set are annotated
``node.machine.sapcloud.io/preserve=auto-preserved`` (the newest first), which the machine
controller then preserves. A lowered limit releases auto-preserved machines, the oldest first
(MCM's code; its guide says the earliest to expire). Machines a user annotated — ``false``
included — are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetrio.api.machine import (
    PHASE_FAILED,
    PRESERVE_ANNOTATION,
    PRESERVE_AUTO_PRESERVED,
    PRESERVE_VALUES,
    Machine,
)
from kubetrio.api.machineset import MachineSet
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machineset")


async def manage_auto_preservation(
    client: Client, ms: MachineSet, machines: Sequence[Machine]
) -> list[Machine]:
    """The set's machines, those annotated (or released) here as written."""
    remaining = (
        ms.spec.auto_preserve_failed_machine_max - ms.status.auto_preserve_failed_machine_count
    )
    result = list(machines)
    if remaining == 0:
        return result
    if remaining < 0:
        auto = [
            m
            for m in result
            if m.metadata.annotations.get(PRESERVE_ANNOTATION) == PRESERVE_AUTO_PRESERVED
        ]
        auto.sort(key=_age)
        for machine in auto[:-remaining]:
            log.info(
                "auto-preservation released, limit lowered",
                machine=machine.name,
                machineset=ms.name,
            )
            await _annotate(client, result, machine, None)
        return result
    candidates = [
        m
        for m in result
        if m.phase == PHASE_FAILED
        and m.metadata.annotations.get(PRESERVE_ANNOTATION) not in PRESERVE_VALUES
    ]
    candidates.sort(key=_age, reverse=True)
    for machine in candidates[:remaining]:
        log.info("auto-preserving failed machine", machine=machine.name, machineset=ms.name)
        await _annotate(client, result, machine, PRESERVE_AUTO_PRESERVED)
    return result


def _age(machine: Machine) -> tuple[str, str]:
    """Oldest first; machines created in the same second (timestamps have seconds only) by
    name, so every pass picks the same ones."""
    return machine.metadata.creation_timestamp or "", machine.name


async def _annotate(
    client: Client, machines: list[Machine], machine: Machine, value: str | None
) -> None:
    try:
        written = await client.patch(
            Machine,
            machine.name,
            {"metadata": {"annotations": {PRESERVE_ANNOTATION: value}}},
            namespace=machine.namespace,
        )
    except ApiError as error:
        if error.status != 404:
            raise
        return
    machines[machines.index(machine)] = written
