"""Which MachineSets a deployment owns (MCM's ``ClaimMachineSets``): its own while they match
its selector; an orphan that matches is adopted (unless the deployment is being deleted); one
of its own that stops matching is released. Owner references are replaced whole, conditional on
the resourceVersion read, so a concurrent change fails the write (retried) and is never lost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.util.labels import SelectorError, selector_matches
from kubetrio.runtime.util.ownerrefs import new_controller_ref


def _matches(deployment: MachineDeployment, machine_set: MachineSet) -> bool:
    try:
        return selector_matches(deployment.spec.selector, machine_set.metadata.labels)
    except SelectorError:
        return False


def _other_refs(machine_set: MachineSet, uid: str) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(r) for r in machine_set.metadata.owner_references if r.uid != uid]


async def claim_sets(
    deployment: MachineDeployment, candidates: Sequence[MachineSet], writer: Writer
) -> list[MachineSet]:
    uid = deployment.metadata.uid
    owned: list[MachineSet] = []
    for machine_set in candidates:
        ref = machine_set.metadata.controller_ref()
        matches = _matches(deployment, machine_set)
        if ref is not None and ref.uid == uid:
            if matches or deployment.deleting:
                owned.append(machine_set)
            else:
                log.info(
                    "releasing machine set", deployment=deployment.name, machineset=machine_set.name
                )
                await writer.patch_set(
                    machine_set,
                    [
                        {
                            "op": "add",
                            "path": "/metadata/ownerReferences",
                            "value": _other_refs(machine_set, uid),
                        }
                    ],
                )
        elif ref is None and matches and not deployment.deleting and not machine_set.deleting:
            log.info(
                "adopting machine set", deployment=deployment.name, machineset=machine_set.name
            )
            refs = [
                *_other_refs(machine_set, uid),
                msgspec.to_builtins(new_controller_ref(deployment)),
            ]
            owned.append(
                await writer.patch_set(
                    machine_set,
                    [{"op": "add", "path": "/metadata/ownerReferences", "value": refs}],
                )
            )
    return owned
