"""MCM's PreferNoSchedule taint on the nodes of a rollout's old MachineSets: pods rescheduled
meanwhile prefer the new machines over those about to be drained. A set whose nodes carry it is
annotated with the taint's key, so it is tainted once; when such a set becomes current again (a
rollback, or a template reverted) its nodes are untainted and the annotation goes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubetrio.api.core import Node, Taint
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.machinedeployment.autoscaler import nodes_of
from kubetrio.controllers.machinedeployment.revisions import PREFER_NO_SCHEDULE_KEY
from kubetrio.controllers.machinedeployment.writes import Writer
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError

TAINT = Taint(key=PREFER_NO_SCHEDULE_KEY, value="True", effect="PreferNoSchedule")


def _is_ours(taint: Taint) -> bool:
    return taint.key == TAINT.key and taint.effect == TAINT.effect


async def taint_old_sets(
    writer: Writer, old: Sequence[MachineSet], machines: Lister[Machine], nodes: Lister[Node]
) -> list[MachineSet]:
    """The sets annotated now, as written."""
    annotated: list[MachineSet] = []
    for machine_set in old:
        if PREFER_NO_SCHEDULE_KEY in machine_set.metadata.annotations:
            continue
        for name in nodes_of([machine_set], machines):
            node = nodes.get("", name)
            if node is not None and not any(_is_ours(t) for t in node.spec.taints):
                await _write_taints(writer, node, [*node.spec.taints, TAINT])
        updated = await writer.patch_set(
            machine_set,
            [
                {
                    "op": "add",
                    "path": "/metadata/annotations",
                    "value": {**machine_set.metadata.annotations, PREFER_NO_SCHEDULE_KEY: "True"},
                }
            ],
        )
        annotated.append(updated)
    return annotated


async def untaint_set(
    writer: Writer, machine_set: MachineSet, machines: Lister[Machine], nodes: Lister[Node]
) -> MachineSet:
    if PREFER_NO_SCHEDULE_KEY not in machine_set.metadata.annotations:
        return machine_set
    for name in nodes_of([machine_set], machines):
        node = nodes.get("", name)
        if node is not None and any(_is_ours(t) for t in node.spec.taints):
            await _write_taints(writer, node, [t for t in node.spec.taints if not _is_ours(t)])
    annotations = {
        k: v for k, v in machine_set.metadata.annotations.items() if k != PREFER_NO_SCHEDULE_KEY
    }
    return await writer.patch_set(
        machine_set, [{"op": "add", "path": "/metadata/annotations", "value": annotations}]
    )


async def _write_taints(writer: Writer, node: Node, taints: list[Taint]) -> None:
    """The node's taints replaced whole (a merge patch replaces a list), conditional on the
    version read: a conflict is retried with the pass. A node gone meanwhile needs nothing."""
    value: list[dict[str, Any]] = [msgspec.to_builtins(t) for t in taints]
    patch = {"metadata": {"resourceVersion": node.resource_version}, "spec": {"taints": value}}
    try:
        await writer.node_client.patch(Node, node.name, patch)
    except ApiError as error:
        if error.status != 404:
            raise
