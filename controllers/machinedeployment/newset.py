"""Finding or creating the deployment's current MachineSet and keeping its revision (MCM's
``getNewMachineSet``): the set whose template equals the deployment's, brought to the next
revision if an older one came back; created, named after the template's hash, when none has it."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.machinedeployment import progress, scaling
from kubetrio.controllers.machinedeployment.hashing import (
    TEMPLATE_HASH_LABEL,
    equal_ignore_hash,
    set_name,
    template_hash,
    with_hash_label,
)
from kubetrio.controllers.machinedeployment.revisions import (
    REVISION_ANNOTATION,
    max_revision,
    new_set_annotations,
    replicas_annotations,
)
from kubetrio.controllers.machinedeployment.sets import SetState
from kubetrio.controllers.machinedeployment.state import (
    Pass,
    set_revisions,
    states,
    template_of,
)
from kubetrio.controllers.machinedeployment.writes import Writer, log
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.util import clock
from kubetrio.runtime.util.ownerrefs import new_controller_ref

# Template parts MCM copies onto the current set in place instead of rolling a new one.
IN_PLACE = ("nodeTemplate", "machineConfiguration")


async def sync_new_set(step: Pass, writer: Writer, *, create: bool) -> MachineSet | None:
    new = step.new_set()
    new_revision = max_revision(set_revisions(step.old_sets(new))) + 1
    if new is not None:
        return await _update_existing(step, writer, new, new_revision)
    if not create:
        return None
    return await _create(step, writer, new_revision)


async def _update_existing(
    step: Pass, writer: Writer, new: MachineSet, new_revision: int
) -> MachineSet:
    ops: list[dict[str, Any]] = []
    annotations = new_set_annotations(
        step.deployment.metadata.annotations, new.metadata.annotations, new_revision
    )
    if annotations != new.metadata.annotations:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": annotations})
    if new.spec.min_ready_seconds != step.deployment.spec.min_ready_seconds:
        ops.append(
            {
                "op": "add",
                "path": "/spec/minReadySeconds",
                "value": step.deployment.spec.min_ready_seconds,
            }
        )
    limit = step.deployment.spec.auto_preserve_failed_machine_max
    if new.spec.auto_preserve_failed_machine_max != limit:
        ops.append({"op": "add", "path": "/spec/autoPreserveFailedMachineMax", "value": limit})
    have = template_of(new).get("spec") or {}
    want = template_of(step.deployment).get("spec") or {}
    for part in IN_PLACE:
        if have.get(part) != want.get(part):
            wanted_spec = ((await step.raw_spec()).get("template") or {}).get("spec") or {}
            if part in wanted_spec:
                ops.append(
                    {"op": "add", "path": f"/spec/template/spec/{part}", "value": wanted_spec[part]}
                )
            else:
                ops.append({"op": "remove", "path": f"/spec/template/spec/{part}"})
    kind = step.deployment.spec.template.spec.class_.kind
    if kind != new.spec.template.spec.class_.kind:
        ops.append({"op": "add", "path": "/spec/template/spec/class/kind", "value": kind})
    if ops:
        updated = await writer.patch_set(new, ops)
        step.replace(updated)
        return updated
    revision = new.metadata.annotations.get(REVISION_ANNOTATION, "")
    await _record_revision(step, writer, revision)
    if progress.get_condition(step.status.get("conditions") or (), progress.PROGRESSING) is None:
        step.status["conditions"] = progress.set_condition(
            step.status.get("conditions") or [],
            progress.new_condition(
                progress.PROGRESSING,
                "True",
                progress.FOUND_NEW_SET,
                f'Found new machine set "{new.name}"',
                clock.now(),
            ),
        )
        step.deployment = await writer.write_status(step.deployment, step.status)
    return new


async def _record_revision(step: Pass, writer: Writer, revision: str) -> None:
    if not revision or step.deployment.metadata.annotations.get(REVISION_ANNOTATION) == revision:
        return
    annotations = {**step.deployment.metadata.annotations, REVISION_ANNOTATION: revision}
    step.deployment = await writer.patch_deployment(
        step.deployment, [{"op": "add", "path": "/metadata/annotations", "value": annotations}]
    )


async def _create(step: Pass, writer: Writer, new_revision: int) -> MachineSet:
    deployment = step.deployment
    raw_spec = await step.raw_spec()
    raw_template = raw_spec.get("template") or {}
    hash_value = template_hash(raw_template, step.collision_count)
    template = with_hash_label(raw_template, hash_value)
    template.setdefault("metadata", {}).pop("creationTimestamp", None)
    selector = dict(raw_spec.get("selector") or {})
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        TEMPLATE_HASH_LABEL: hash_value,
    }
    name = set_name(deployment.name, hash_value)
    fresh = SetState(name=name, replicas=0)
    replicas = scaling.new_set_replicas(
        step.strategy,
        step.replicas,
        step.bounds.max_surge,
        [*states(step.sets), fresh],
        fresh,
        manual=step.manual,
    )
    annotations = {
        **new_set_annotations(deployment.metadata.annotations, {}, new_revision),
        **replicas_annotations(step.replicas, step.replicas + step.bounds.max_surge),
    }
    body = {
        "metadata": {
            "name": name,
            "namespace": deployment.namespace,
            "labels": template["metadata"].get("labels") or {},
            "annotations": annotations,
            "ownerReferences": [msgspec.to_builtins(new_controller_ref(deployment))],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": deployment.spec.min_ready_seconds,
            "autoPreserveFailedMachineMax": deployment.spec.auto_preserve_failed_machine_max
            or None,
            "selector": selector,
            "template": template,
        },
    }
    try:
        created = await writer.client.create(MachineSet, body, namespace=deployment.namespace)
    except ApiError as error:
        if error.status == 409:
            return await _name_taken(step, writer, name)
        message = f'Failed to create new machine set "{name}": {error}'
        step.status["conditions"] = progress.set_condition(
            step.status.get("conditions") or [],
            progress.new_condition(
                progress.PROGRESSING, "False", progress.FAILED_SET_CREATE, message, clock.now()
            ),
        )
        step.deployment = await writer.write_status(deployment, step.status)
        await writer.event(deployment, "Warning", progress.FAILED_SET_CREATE, message)
        raise
    log.info("created machine set", deployment=deployment.name, machineset=name, replicas=replicas)
    if replicas > 0:
        await writer.event(
            deployment, "Normal", "ScalingMachineSet", f"Scaled up machine set {name} to {replicas}"
        )
    step.sets.append(created)
    await _record_revision(step, writer, str(new_revision))
    step.status["conditions"] = progress.set_condition(
        step.status.get("conditions") or [],
        progress.new_condition(
            progress.PROGRESSING,
            "True",
            progress.NEW_MACHINE_SET,
            f'Created new machine set "{name}"',
            clock.now(),
        ),
    )
    step.deployment = await writer.write_status(step.deployment, step.status)
    return created


async def _name_taken(step: Pass, writer: Writer, name: str) -> MachineSet:
    """Our own set the cache has not shown yet is used; anyone else's name means a hash
    collision: count it (the next hash differs) and fail this pass so it runs again."""
    existing = await writer.client.get_or_none(MachineSet, name, namespace=step.namespace)
    if existing is not None:
        ref = existing.metadata.controller_ref()
        if (
            ref is not None
            and ref.uid == step.deployment.metadata.uid
            and equal_ignore_hash(template_of(existing), template_of(step.deployment))
        ):
            step.sets.append(existing)
            return existing
    step.status["collisionCount"] = (step.collision_count or 0) + 1
    step.deployment = await writer.write_status(step.deployment, step.status)
    raise RuntimeError(f"machine set {name} exists and is not this deployment's: hash collision")
