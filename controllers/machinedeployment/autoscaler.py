"""The cluster autoscaler's side of a deployment, as MCM master handles it.

- ``node.machine.sapcloud.io/trigger-deletion-by-mcm`` on a deployment names the machines the
  autoscaler wants gone (``name~RFC3339 time``, comma-separated) when it lowers replicas: each
  named machine that still runs gets ``machinepriority.machine.sapcloud.io: "1"`` and its
  marked-for-deletion time, so its set removes exactly it; entries of machines already gone,
  Failed or terminating are dropped. Bare names get the time of the scaler's replica change.
- During a rollout every node of the deployment carries ``cluster-autoscaler.kubernetes.io/
  scale-down-disabled`` (and ``…-by-mcm``, so only what MCM added is removed afterwards): the
  autoscaler must not remove nodes while machines are being replaced. Unlike MCM, a node whose
  user disabled scale-down already is left alone, so the rollout's cleanup cannot remove the
  user's annotation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubetrio.api.core import Node
from kubetrio.api.machine import PHASE_FAILED, Machine
from kubetrio.api.machineset import (
    LAST_SCALER_CHANGE_ANNOTATION,
    MARKED_FOR_DELETION_TIME_ANNOTATION,
    MachineSet,
)
from kubetrio.api.meta import format_time
from kubetrio.controllers.machine.status import NODE_LABEL, PRIORITY_ANNOTATION
from kubetrio.controllers.machinedeployment.state import Pass
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError

TRIGGER_DELETION = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
LAST_SCALER_CHANGE = LAST_SCALER_CHANGE_ANNOTATION
MARKED_FOR_DELETION_TIME = MARKED_FOR_DELETION_TIME_ANNOTATION
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
SCALE_DOWN_DISABLED_BY_MCM = "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"
DURING_ROLLOUT = {SCALE_DOWN_DISABLED: "true", SCALE_DOWN_DISABLED_BY_MCM: "true"}


def with_times(value: str, stamp: str) -> str:
    """Every entry as ``name~time``; bare names take ``stamp``, malformed ones are dropped."""
    entries = []
    for entry in value.split(","):
        parts = entry.split("~")
        if len(parts) == 1:
            entries.append(f"{parts[0]}~{stamp}")
        elif len(parts) == 2:
            entries.append(entry)
    return ",".join(entries)


@dataclass(frozen=True, slots=True)
class Marked:
    machine: Machine
    time: str


def still_pending(
    value: str, machine_named: Iterable[tuple[str, Machine | None]]
) -> tuple[str, list[Marked]]:
    """The annotation's entries whose machines still need marking, and those machines."""
    lookup = dict(machine_named)
    kept: list[str] = []
    marked: list[Marked] = []
    for entry in value.split(","):
        parts = entry.split("~")
        if len(parts) != 2:
            continue
        name, stamp = parts
        try:
            dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            continue
        machine = lookup.get(name)
        if machine is None or machine.deleting or machine.phase == PHASE_FAILED:
            continue
        kept.append(entry)
        marked.append(Marked(machine, stamp))
    return ",".join(kept), marked


def entry_names(value: str) -> list[str]:
    return [entry.split("~")[0] for entry in value.split(",") if entry]


async def mark_triggered_machines(
    step: Pass, writer: Writer, machines: Lister[Machine], now: dt.datetime
) -> None:
    """MCM's ``adjustingMachineDeploymentDeletionAnnotations`` and
    ``updateMachineAndMachineDeploymentDeletionAnnotations``."""
    annotations = dict(step.deployment.metadata.annotations)
    value = annotations.get(TRIGGER_DELETION, "")
    if not value:
        return
    stamp = annotations.get(LAST_SCALER_CHANGE) or format_time(now)
    timed = with_times(value, stamp)
    pending, marked = still_pending(
        timed, ((n, machines.get(step.namespace, n)) for n in entry_names(timed))
    )
    if pending != value:
        annotations[LAST_SCALER_CHANGE] = stamp
        if pending:
            annotations[TRIGGER_DELETION] = pending
        else:
            annotations.pop(TRIGGER_DELETION)
        step.deployment = await writer.patch_deployment(
            step.deployment, [{"op": "add", "path": "/metadata/annotations", "value": annotations}]
        )
    for each in marked:
        current = each.machine.metadata.annotations
        if current.get(PRIORITY_ANNOTATION) == "1" and current.get(MARKED_FOR_DELETION_TIME):
            continue
        patch = {PRIORITY_ANNOTATION: "1"}
        if not current.get(MARKED_FOR_DELETION_TIME):
            patch[MARKED_FOR_DELETION_TIME] = each.time
        log.info("machine marked for deletion", deployment=step.name, machine=each.machine.name)
        await writer.client.patch(
            Machine,
            each.machine.name,
            {"metadata": {"annotations": patch}},
            namespace=each.machine.namespace,
        )


def scaled_to_zero(old: Sequence[MachineSet]) -> bool:
    """MCM's ``machineSetsScaledToZero``: no old set still has replicas by every count."""
    return not any(
        s.spec.replicas
        and s.status.available_replicas
        and s.status.fully_labeled_replicas
        and s.status.ready_replicas
        and s.status.replicas
        for s in old
    )


def nodes_of(sets: Sequence[MachineSet], machines: Lister[Machine]) -> list[str]:
    uids = {s.metadata.uid for s in sets}
    namespaces = {s.namespace for s in sets}
    return [
        node
        for namespace in namespaces
        for m in machines.list(namespace)
        if (ref := m.metadata.controller_ref()) is not None
        and ref.uid in uids
        and (node := m.metadata.labels.get(NODE_LABEL))
    ]


async def disable_scale_down(
    writer: Writer, sets: Sequence[MachineSet], machines: Lister[Machine], nodes: Lister[Node]
) -> None:
    for name in nodes_of(sets, machines):
        node = nodes.get("", name)
        if node is None:
            continue
        have = node.metadata.annotations
        if SCALE_DOWN_DISABLED_BY_MCM not in have and SCALE_DOWN_DISABLED in have:
            # The user's own: MCM would take it over and remove it after the rollout.
            continue
        if all(have.get(k) == v for k, v in DURING_ROLLOUT.items()):
            continue
        await _patch_node(writer, name, dict(DURING_ROLLOUT))


async def enable_scale_down(
    writer: Writer, sets: Sequence[MachineSet], machines: Lister[Machine], nodes: Lister[Node]
) -> None:
    """Only from nodes MCM annotated (the ``…-by-mcm`` marker): a user's own stays."""
    for name in nodes_of(sets, machines):
        node = nodes.get("", name)
        if node is None or SCALE_DOWN_DISABLED_BY_MCM not in node.metadata.annotations:
            continue
        await _patch_node(writer, name, dict.fromkeys(DURING_ROLLOUT))


async def _patch_node(writer: Writer, name: str, annotations: dict[str, str | None]) -> None:
    try:
        await writer.node_client.patch(Node, name, {"metadata": {"annotations": annotations}})
    except ApiError as error:
        if error.status != 404:  # a node gone meanwhile needs nothing
            raise
