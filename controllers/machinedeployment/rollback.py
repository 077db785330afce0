"""``spec.rollbackTo`` (MCM's, kept from extensions/v1beta1): the deployment takes back the
template of the set with that revision (0: the one before the current), which then rolls out
as any template change; ``rollbackTo`` is cleared in the same write either way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.machinedeployment.hashing import equal_ignore_hash, without_hash_label
from kubetrio.controllers.machinedeployment.newset import sync_new_set
from kubetrio.controllers.machinedeployment.revisions import last_revision, rollback_annotations
from kubetrio.controllers.machinedeployment.state import (
    Pass,
    revision_of,
    set_revisions,
    template_of,
)
from kubetrio.controllers.machinedeployment.writes import Writer
from kubetrio.runtime.client.typed import object_path

NOT_FOUND = "DeploymentRollbackRevisionNotFound"
UNCHANGED = "DeploymentRollbackTemplateUnchanged"
DONE = "DeploymentRollback"


async def rollback(
    step: Pass, writer: Writer, untaint: Callable[[MachineSet], Awaitable[object]] | None = None
) -> None:
    """``untaint`` clears the target set's nodes of the rollout taint before it comes back."""
    await sync_new_set(step, writer, create=True)
    deployment = step.deployment
    assert deployment.spec.rollback_to is not None
    target = deployment.spec.rollback_to.revision
    if target == 0:
        target = last_revision(set_revisions(step.sets))
        if target == 0:
            await writer.event(deployment, "Warning", NOT_FOUND, "Unable to find last revision.")
            await _clear(step, writer, [])
            return
    match = next((s for s in step.sets if revision_of(s) == target), None)
    if match is None:
        await writer.event(
            deployment, "Warning", NOT_FOUND, "Unable to find the revision to rollback to."
        )
        await _clear(step, writer, [])
        return
    if untaint is not None:
        # Before anything else, as MCM: even a rollback to the current template (a rollout
        # already reverted) clears that set's nodes. Its annotation changes, its template not.
        await untaint(match)
    if equal_ignore_hash(template_of(deployment), template_of(match)):
        await writer.event(
            deployment,
            "Warning",
            UNCHANGED,
            "The rollback revision contains the same template as current deployment "
            f'"{deployment.name}"',
        )
        await _clear(step, writer, [])
        return
    raw_set = await _raw_set(writer, match)
    template = without_hash_label(raw_set.get("spec", {}).get("template") or {})
    annotations = rollback_annotations(deployment.metadata.annotations, match.metadata.annotations)
    await _clear(
        step,
        writer,
        [
            {"op": "replace", "path": "/spec/template", "value": template},
            {"op": "add", "path": "/metadata/annotations", "value": annotations},
        ],
    )
    await writer.event(
        deployment,
        "Normal",
        DONE,
        f'Rolled back deployment "{deployment.name}" to revision {target}',
    )


async def _clear(step: Pass, writer: Writer, ops: list[dict[str, Any]]) -> None:
    step.deployment = await writer.patch_deployment(
        step.deployment, [*ops, {"op": "remove", "path": "/spec/rollbackTo"}]
    )


async def _raw_set(writer: Writer, machine_set: MachineSet) -> dict[str, Any]:
    """The whole set as stored: its template goes back into the deployment, every field."""
    path = object_path(MachineSet.KIND, machine_set.namespace, machine_set.name)
    document: dict[str, Any] = msgspec.json.decode(await writer.client.request("GET", path))
    return document
