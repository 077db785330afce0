"""The ``machine-template-hash`` label back-filled onto a deployment's sets that lack it in
their selector (MCM's ``addHashKeyToISAndMachines``): sets made by hand, by an old MCM, or
adopted as orphans. Without it a new set's selector could overlap theirs.

MCM does it in three steps and waits between them; here each pass does what the last one
left ready and the next pass carries on, so a deployment never blocks on it:

1. the hash label goes into the set's template (new machines carry it from then on);
2. once the set controller observed that template, the set's machines get the label;
3. once the set counts every machine as fully labelled, the label goes into the set's labels
   and selector.

The hash is taken over the set's template without the label, with the deployment's collision
count, as MCM takes it.
"""

from __future__ import annotations

from typing import Any

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.machinedeployment.hashing import (
    TEMPLATE_HASH_LABEL,
    template_hash,
    without_hash_label,
)
from kubetrio.controllers.machinedeployment.state import Pass, template_of
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError


def needs_hash(machine_set: MachineSet) -> bool:
    selector = machine_set.spec.selector
    return selector is None or TEMPLATE_HASH_LABEL not in selector.match_labels


async def backfill_hash_labels(step: Pass, writer: Writer, machines: Lister[Machine]) -> bool:
    """Move every set of the pass that lacks the label one step on; whether any still does."""
    pending = False
    for machine_set in [s for s in step.sets if needs_hash(s)]:
        updated = await _advance(step, writer, machines, machine_set)
        step.replace(updated)
        pending = pending or needs_hash(updated)
    return pending


async def _advance(
    step: Pass, writer: Writer, machines: Lister[Machine], machine_set: MachineSet
) -> MachineSet:
    hash_value = template_hash(without_hash_label(template_of(machine_set)), step.collision_count)
    template_labels = machine_set.spec.template.metadata.labels
    if template_labels.get(TEMPLATE_HASH_LABEL) != hash_value:
        log.info("labelling machine set template", machineset=machine_set.name, hash=hash_value)
        return await writer.patch_set(
            machine_set,
            [
                _add(
                    "/spec/template/metadata/labels",
                    {**template_labels, TEMPLATE_HASH_LABEL: hash_value},
                )
            ],
        )
    if machine_set.status.observed_generation < machine_set.metadata.generation:
        return machine_set  # the set controller has not seen its new template yet
    for machine in _machines_of(machine_set, machines):
        if machine.metadata.labels.get(TEMPLATE_HASH_LABEL) != hash_value:
            await _label_machine(writer, machine, hash_value)
    if machine_set.status.fully_labeled_replicas < machine_set.spec.replicas:
        return machine_set  # until the set counts its machines as labelled
    selector = machine_set.spec.selector
    match_labels = {**(selector.match_labels if selector else {}), TEMPLATE_HASH_LABEL: hash_value}
    log.info("adding template hash to machine set selector", machineset=machine_set.name)
    return await writer.patch_set(
        machine_set,
        [
            _add(
                "/metadata/labels", {**machine_set.metadata.labels, TEMPLATE_HASH_LABEL: hash_value}
            ),
            _add("/spec/selector/matchLabels", match_labels)
            if selector is not None
            else _add("/spec/selector", {"matchLabels": match_labels}),
        ],
    )


def _add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def _machines_of(machine_set: MachineSet, machines: Lister[Machine]) -> list[Machine]:
    uid = machine_set.metadata.uid
    return [
        m
        for m in machines.list(machine_set.namespace)
        if (ref := m.metadata.controller_ref()) is not None and ref.uid == uid
    ]


async def _label_machine(writer: Writer, machine: Machine, hash_value: str) -> None:
    patch = {"metadata": {"labels": {TEMPLATE_HASH_LABEL: hash_value}}}
    try:
        await writer.client.patch(Machine, machine.name, patch, namespace=machine.namespace)
    except ApiError as error:
        if error.status != 404:  # a machine gone meanwhile needs no label
            raise
