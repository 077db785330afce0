"""MCM's in-place rollout (``rolloutInPlace``, GEP-31): machines are not replaced but updated
where they run, by an agent on the node, and then moved to the new MachineSet.

The deployment controller only talks through the Node and the Machine:

1. every node of an old set is labelled ``candidate-for-update``; old sets get
   ``scale-up-disabled`` (a machine moved away must not be replaced by its old set);
2. some candidates are labelled ``selected-for-update``: by this controller within
   ``maxUnavailable`` (Auto), or by the user (Manual);
3. the machine controller drains a selected node and hands it to the agent (the node condition
   ``InPlaceUpdate`` goes SelectedForUpdate → DrainSuccessful → ReadyForUpdate); the agent
   labels the node ``update-result=successful`` (or ``failed``, with a reason annotation);
4. a machine whose update succeeded is moved here to the new set (owner, template-hash label,
   ``update-result`` on the machine so neither set deletes it meanwhile), the sets' replicas
   follow, and its node is cleaned up, uncordoned and tainted ``critical-components-not-ready``
   until its critical components run again.

With ``maxSurge`` an Auto update may also create new machines in the new set; then old machines
that are no longer needed go as in a rolling update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubetrio.api.core import Node, Taint
from kubetrio.api.machine import (
    ANNOTATION_MACHINE_UPDATE_FAILED_REASON,
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
    LABEL_VALUE_NODE_UPDATE_SUCCESSFUL,
    NODE_IN_PLACE_UPDATE,
    PHASE_IN_PLACE_UPDATING,
    UPDATE_SUCCESSFUL,
    Machine,
)
from kubetrio.api.machineset import LABEL_MACHINE_SET_SCALE_UP_DISABLED, MachineSet
from kubetrio.controllers.machine.health_check import CRITICAL_COMPONENTS_TAINT
from kubetrio.controllers.machine.status import NODE_LABEL
from kubetrio.controllers.machinedeployment import autoscaler, taints
from kubetrio.controllers.machinedeployment.newset import sync_new_set
from kubetrio.controllers.machinedeployment.sets import age_key
from kubetrio.controllers.machinedeployment.state import Pass
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError

CRITICAL_COMPONENTS_NOT_READY = Taint(key=CRITICAL_COMPONENTS_TAINT, effect="NoSchedule")


def update_succeeded(reason: str | None, labels: dict[str, str]) -> bool:
    """The agent said so (the label) and the machine controller saw it (the condition)."""
    return (
        reason == UPDATE_SUCCESSFUL
        and labels.get(LABEL_NODE_UPDATE_RESULT) == LABEL_VALUE_NODE_UPDATE_SUCCESSFUL
    )


class InPlaceRollout:
    """One pass of an in-place rollout over a deployment's sets."""

    def __init__(
        self,
        step: Pass,
        writer: Writer,
        machines: Lister[Machine],
        nodes: Lister[Node],
        *,
        hold_autoscaler: bool = True,
    ) -> None:
        self.step = step
        self.writer = writer
        self.machines = machines
        self.nodes = nodes
        self.hold_autoscaler = hold_autoscaler

    # -- reads

    def machines_of(self, machine_set: MachineSet) -> list[Machine]:
        """MCM lists a set's machines by its selector's labels, whoever owns them."""
        wanted = machine_set.spec.selector.match_labels if machine_set.spec.selector else {}
        return [
            m
            for m in self.machines.list(machine_set.namespace)
            if all(m.metadata.labels.get(k) == v for k, v in wanted.items())
        ]

    def node_of(self, machine: Machine) -> Node | None:
        name = machine.metadata.labels.get(NODE_LABEL, "")
        return self.nodes.get("", name) if name else None

    def undergoing_update(self, old: Sequence[MachineSet]) -> int:
        """Machines of the old sets whose nodes are selected for update."""
        return sum(
            1
            for s in old
            for m in self.machines_of(s)
            if (node := self.node_of(m)) is not None
            and LABEL_NODE_SELECTED_FOR_UPDATE in node.metadata.labels
        )

    # -- the pass

    async def run(self) -> MachineSet | None:
        """One step; the new set when nothing was left to do (the rollout may be complete),
        None when this pass moved something."""
        step = self.step
        new = await sync_new_set(step, self.writer, create=True)
        assert new is not None
        new = await self._set_label(new, LABEL_MACHINE_SET_SCALE_UP_DISABLED, None)
        old = step.old_sets(new)
        if old and not autoscaler.scaled_to_zero(old):
            for machine_set in old:
                await self._set_label(machine_set, LABEL_MACHINE_SET_SCALE_UP_DISABLED, "true")
            if self.hold_autoscaler:
                await autoscaler.disable_scale_down(
                    self.writer, step.sets, self.machines, self.nodes
                )
        for updated in await taints.taint_old_sets(
            self.writer, step.old_sets(new), self.machines, self.nodes
        ):
            step.replace(updated)
        old = step.old_sets(new)
        for machine_set in old:
            for machine in self.machines_of(machine_set):
                await self._label_node(machine, LABEL_NODE_CANDIDATE_FOR_UPDATE)
        new = await self._sync_machine_sets(old, new)
        if await self._reconcile_new_set(step.old_sets(new), new):
            return None
        active = [s for s in step.old_sets(new) if s.spec.replicas > 0]
        if await self._reconcile_old_sets(active, new):
            return None
        return new

    async def _sync_machine_sets(self, old: Sequence[MachineSet], new: MachineSet) -> MachineSet:
        """MCM's ``syncMachineSets``: account for machines moved to the new set, finish their
        nodes' update, and shrink old sets to the machines they still have."""
        step = self.step
        new_machines = self.machines_of(new)
        moved = [
            m
            for m in new_machines
            if m.metadata.labels.get(LABEL_NODE_UPDATE_RESULT) == LABEL_VALUE_NODE_UPDATE_SUCCESSFUL
            and (c := m.condition(NODE_IN_PLACE_UPDATE)) is not None
            and c.reason == UPDATE_SUCCESSFUL
        ]
        if len(new_machines) > new.spec.replicas and moved:
            grow = min(len(moved), len(new_machines) - new.spec.replicas)
            new = await self._scale(new, new.spec.replicas + grow)
        for machine in moved:
            await self.writer.client.patch(
                Machine,
                machine.name,
                {"metadata": {"labels": {LABEL_NODE_UPDATE_RESULT: None}}},
                namespace=machine.namespace,
            )
        for machine in new_machines:
            node = self.node_of(machine)
            if node is None:
                continue
            condition = next(
                (c for c in node.status.conditions if c.type == NODE_IN_PLACE_UPDATE), None
            )
            if not update_succeeded(condition.reason if condition else None, node.metadata.labels):
                continue
            await self._finish_node(node)
        for machine_set in old:
            have = len(self.machines_of(machine_set))
            if have < machine_set.spec.replicas:
                step.replace(await self._scale(machine_set, have))
        return new

    async def _finish_node(self, node: Node) -> None:
        """The update's labels and annotation off, uncordoned, the rollout's PreferNoSchedule
        taint off and ``critical-components-not-ready`` on."""
        kept = [t for t in node.spec.taints if t.key != taints.TAINT.key]
        if not any(t.key == CRITICAL_COMPONENTS_TAINT for t in kept):
            kept.append(CRITICAL_COMPONENTS_NOT_READY)
        labels: dict[str, Any] = dict.fromkeys(
            (
                LABEL_NODE_CANDIDATE_FOR_UPDATE,
                LABEL_NODE_SELECTED_FOR_UPDATE,
                LABEL_NODE_UPDATE_RESULT,
            )
        )
        log.info("in-place update of node finished, uncordoning", node=node.name)
        await self._patch_node(
            node,
            {
                "metadata": {
                    "resourceVersion": node.resource_version,
                    "labels": labels,
                    "annotations": {ANNOTATION_MACHINE_UPDATE_FAILED_REASON: None},
                },
                "spec": {
                    "unschedulable": False,
                    "taints": [msgspec.to_builtins(t) for t in kept],
                },
            },
        )

    async def _reconcile_new_set(self, old: Sequence[MachineSet], new: MachineSet) -> bool:
        """MCM's ``reconcileNewMachineSetInPlace``: the new set's size, growing by machines
        moved from old sets once they are updated. True when a set was scaled."""
        step = self.step
        wanted = step.replicas
        if new.spec.replicas == wanted:
            return False
        if new.spec.replicas > wanted:
            return await self._scaled(new, wanted)
        old_count = sum(s.spec.replicas for s in old)
        if old_count == 0:
            return await self._scaled(new, wanted)
        if old_count + new.spec.replicas < wanted:
            return await self._scaled(new, wanted - old_count)
        moved = await self._transfer(old, new)
        if moved == 0:
            return False
        return await self._scaled(new, new.spec.replicas + moved)

    async def _transfer(self, old: Sequence[MachineSet], new: MachineSet) -> int:
        """Machines whose update succeeded become the new set's; each old set shrinks by what
        it gave."""
        step = self.step
        new_selector = new.spec.selector.match_labels if new.spec.selector else {}
        added = 0
        for machine_set in old:
            given = 0
            old_selector = (
                machine_set.spec.selector.match_labels if machine_set.spec.selector else {}
            )
            for machine in self.machines_of(machine_set):
                node = self.node_of(machine)
                if node is None:
                    continue
                condition = machine.condition(NODE_IN_PLACE_UPDATE)
                if (
                    not update_succeeded(
                        condition.reason if condition else None, node.metadata.labels
                    )
                    or machine.phase == PHASE_IN_PLACE_UPDATING
                ):
                    continue
                labels: dict[str, str | None] = dict.fromkeys(old_selector)
                labels.update(new_selector)
                labels[LABEL_NODE_UPDATE_RESULT] = LABEL_VALUE_NODE_UPDATE_SUCCESSFUL
                owner = {
                    "apiVersion": "machine.sapcloud.io/v1alpha1",
                    "kind": "MachineSet",
                    "name": new.name,
                    "uid": new.metadata.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
                log.info(
                    "moving in-place updated machine to the new machine set",
                    deployment=step.name,
                    machine=machine.name,
                    machineset=new.name,
                )
                await self.writer.client.patch(
                    Machine,
                    machine.name,
                    {
                        "metadata": {
                            "resourceVersion": machine.resource_version,
                            "ownerReferences": [owner],
                            "labels": labels,
                        }
                    },
                    namespace=machine.namespace,
                )
                await self._patch_node(node, {"spec": {"unschedulable": False}})
                given += 1
            if given:
                step.replace(await self._scale(machine_set, machine_set.spec.replicas - given))
                added += given
        return added

    async def _reconcile_old_sets(self, old: Sequence[MachineSet], new: MachineSet) -> bool:
        """MCM's ``reconcileOldMachineSetsInPlace``: with the new set full, the old ones go to
        zero; otherwise (Auto) select more candidates for update within ``maxUnavailable``.
        True when something was done."""
        step = self.step
        old_count = sum(s.spec.replicas for s in old)
        if old_count == 0:
            return False
        if new.spec.replicas == step.replicas:
            for machine_set in old:
                step.replace(await self._scale(machine_set, 0))
            return True
        if step.manual:
            return False
        all_sets = [*old, new]
        all_count = sum(s.spec.replicas for s in all_sets)
        min_available = step.replicas - step.bounds.max_unavailable
        new_unavailable = max(0, new.spec.replicas - new.status.available_replicas)
        updating = self.undergoing_update(old)
        if updating + new.spec.replicas >= step.replicas:
            return False
        if all_count - min_available - new_unavailable - updating <= 0:
            return False
        available = sum(s.status.available_replicas for s in all_sets) - updating
        if available <= min_available:
            return False
        selectable = min(available - min_available, max(step.replicas - new.spec.replicas, 0))
        selected = 0
        for machine_set in sorted(
            old,
            key=lambda s: age_key(
                s.metadata.creation_timestamp or "", s.metadata.annotations, s.name
            ),
        ):
            if selected >= selectable:
                break
            if machine_set.spec.replicas == 0:
                continue
            want = min(machine_set.spec.replicas, selectable - selected)
            for machine in self._candidates(machine_set, want):
                log.info(
                    "selecting machine for in-place update",
                    deployment=step.name,
                    machine=machine.name,
                )
                await self._label_node(machine, LABEL_NODE_SELECTED_FOR_UPDATE)
                selected += 1
        return selected > 0

    def _candidates(self, machine_set: MachineSet, count: int) -> list[Machine]:
        """MCM's ``getMachinesForDrain``: candidates not yet selected, up to ``count``."""
        found: list[Machine] = []
        for machine in self.machines_of(machine_set):
            if len(found) >= count:
                break
            node = self.node_of(machine)
            if node is None:
                continue
            labels = node.metadata.labels
            if LABEL_NODE_CANDIDATE_FOR_UPDATE in labels and (
                LABEL_NODE_SELECTED_FOR_UPDATE not in labels
            ):
                found.append(machine)
        return found

    # -- writes

    async def _scale(self, machine_set: MachineSet, size: int) -> MachineSet:
        step = self.step
        return await self.writer.scale_set(
            step.deployment, machine_set, size, step.replicas + step.bounds.max_surge
        )

    async def _scaled(self, machine_set: MachineSet, size: int) -> bool:
        before = machine_set.spec.replicas
        self.step.replace(await self._scale(machine_set, size))
        return before != size

    async def _set_label(self, machine_set: MachineSet, key: str, value: str | None) -> MachineSet:
        """A merge patch of the one label: the same write twice (from a cache that has not
        shown the first yet) is harmless, so it needs no precondition."""
        if machine_set.metadata.labels.get(key) == value:
            return machine_set
        updated = await self.writer.client.patch(
            MachineSet,
            machine_set.name,
            {"metadata": {"labels": {key: value}}},
            namespace=machine_set.namespace,
        )
        self.step.replace(updated)
        return updated

    async def _label_node(self, machine: Machine, key: str) -> None:
        node = self.node_of(machine)
        if node is None or node.metadata.labels.get(key) == "true":
            return
        await self._patch_node(
            node,
            {"metadata": {"labels": {key: "true"}}},
        )

    async def _patch_node(self, node: Node, patch: dict[str, Any]) -> None:
        """A merge patch (one replacing the taints is conditional on the version read: a
        conflict retries the pass); a node gone meanwhile needs nothing."""
        try:
            await self.writer.node_client.patch(Node, node.name, patch)
        except ApiError as error:
            if error.status != 404:
                raise
