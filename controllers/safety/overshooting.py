"""MCM's overshooting guard: a MachineSet backed by far more Machines than it should ever have
is frozen (label ``freeze: "True"`` and a ``Frozen`` condition, on its MachineDeployment too)
until the count falls back, or an operator sets ``safety.machine.sapcloud.io/unfreeze``.

Why: a bug or a fight between controllers that keeps creating machines costs real money and
quota by the minute; freezing stops a set's scale-ups (its controller skips creating while the
label is set; scale-downs go on) until the count is sane again.

Limits, as MCM: a set alone may have ``2 * replicas + safetyUp`` machines; a set of a
deployment ``deployment replicas + maxSurge + safetyUp`` (a rolling update's surge is
normal). It is unfrozen at or below the limit minus ``safetyDown``. Differences from MCM on
purpose: every set is looked at in each pass (MCM stops at the first one it freezes or
unfreezes), and a deployment without a ``maxSurge`` (Recreate) counts a surge of 0 (MCM's
pass errors out on it).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import (
    MACHINE_DEPLOYMENT_FROZEN,
    MACHINE_SET_FROZEN,
    MachineDeployment,
    MachineSet,
    RollingUpdateMachineDeployment,
)
from kubetrio.api.meta import KubeObject, format_time
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.events.recorder import EventRecorder
from kubetrio.runtime.util.clock import now
from kubetrio.runtime.util.labels import selector_matches, selects_all
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.safety")

FREEZE_LABEL = "freeze"
FROZEN = "True"
UNFREEZE_ANNOTATION = "safety.machine.sapcloud.io/unfreeze"
OVERSHOOTING_REPLICA_COUNT = "OverShootingReplicaCount"
MACHINE_DEPLOYMENT_STATE_SYNC = "MachineDeploymentStateSync"
UNDERSHOOTING_REPLICA_COUNT = "UnderShootingReplicaCount"
UNFREEZE_ANNOTATION_REASON = "UnfreezeAnnotation"
STATE_SYNC_MESSAGE = (
    "MachineDeployment State was inconsistent, hence safety controller has fixed this and frozen it"
)
FREEZE_EVENT = "FrozeMachineSet"
UNFREEZE_EVENT = "UnfrozeMachineSet"


def is_frozen(obj: KubeObject) -> bool:
    """What the MachineSet and MachineDeployment controllers check before scaling up."""
    return obj.metadata.labels.get(FREEZE_LABEL) == FROZEN


def surge(deployment: MachineDeployment) -> int:
    """``maxSurge`` as a count, rounded up like Kubernetes' ``GetValueFromIntOrPercent``.
    Raises ValueError naming the field when it is neither an integer nor a percentage. MCM
    reads the in-place bounds when there is no rollingUpdate."""
    strategy = deployment.spec.strategy
    field = "rollingUpdate"
    bounds: RollingUpdateMachineDeployment | None = strategy.rolling_update
    if bounds is None and strategy.in_place_update is not None:
        field, bounds = "inPlaceUpdate", strategy.in_place_update
    value = bounds.max_surge if bounds is not None else None
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%") and text[:-1].isdigit():
        return math.ceil(int(text[:-1]) * deployment.spec.replicas / 100)
    raise ValueError(
        f"spec.strategy.{field}.maxSurge: expected an integer or a percentage, got {value!r}"
    )


def backing_machines(machine_set: MachineSet, machines: Sequence[Machine]) -> int:
    """MCM's count: machines with the set's template labels and an owner of the set's name."""
    template = machine_set.spec.template.metadata.labels
    count = 0
    for machine in machines:
        labels = machine.metadata.labels
        if any(labels.get(k) != v for k, v in template.items()):
            continue
        count += sum(1 for ref in machine.metadata.owner_references if ref.name == machine_set.name)
    return count


@dataclass(frozen=True, slots=True)
class Limits:
    higher: int  # freeze at or above
    lower: int  # unfreeze at or below


def limits(
    machine_set: MachineSet, deployment: MachineDeployment | None, safety_up: int, safety_down: int
) -> Limits:
    if deployment is None:
        higher = 2 * machine_set.spec.replicas + safety_up
    else:
        higher = deployment.spec.replicas + surge(deployment) + safety_up
    return Limits(higher, higher - safety_down)


class OvershootingGuard:
    """A leader-only runnable: every ``--machine-safety-overshooting-period`` (1 min), and at
    once when a Machine appears (MCM's trigger: the burst that overshoots is made of adds)."""

    needs_leader_election = True

    def __init__(
        self,
        client: Client,
        machines: Informer[Machine],
        machine_sets: Lister[MachineSet],
        deployments: Lister[MachineDeployment],
        events: EventRecorder,
        *,
        safety_up: int = 2,
        safety_down: int = 1,
        period: float = 60.0,
    ) -> None:
        self.client = client
        self.machines = machines.lister
        self.machine_sets = machine_sets
        self.deployments = deployments
        self.events = events
        self.safety_up = safety_up
        self.safety_down = safety_down
        self.period = period
        self._wake = trio.Event()
        machines.add_handler(EventHandler(on_add=self._machine_added))

    def _machine_added(self, machine: Machine, initial: bool) -> None:
        if not initial:
            self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake = trio.Event()
            await self.sweep()
            with trio.move_on_after(self.period):
                await self._wake.wait()

    async def sweep(self) -> None:
        """One pass of MCM's four steps. A failure is logged and leaves that object for the
        next pass; it never stops the others."""
        machines = self.machines.list()
        for machine_set in self.machine_sets.list():
            await self._guarded(self._check_set, machine_set, machines)
        for deployment in self.deployments.list():
            await self._guarded(self._sync_deployment, deployment)
        for deployment in self.deployments.list():
            if UNFREEZE_ANNOTATION in deployment.metadata.annotations:
                await self._guarded(self._unfreeze_deployment_by_annotation, deployment)
        for machine_set in self.machine_sets.list():
            if UNFREEZE_ANNOTATION in machine_set.metadata.annotations:
                await self._guarded(self._unfreeze_set, machine_set)

    async def _guarded(self, step: Any, obj: KubeObject, *args: Any) -> None:
        try:
            await step(obj, *args)
        except (ApiError, ValueError) as error:
            if isinstance(error, ApiError) and error.status == 404:
                return  # gone meanwhile
            log.warning(
                "safety: overshooting check failed",
                kind=obj.KIND.kind,
                name=obj.metadata.name,
                error=str(error),
            )

    # -- the steps

    def deployment_of(self, machine_set: MachineSet) -> MachineDeployment | None:
        """The deployment whose selector takes the set's labels (the oldest if several)."""
        found = [
            d
            for d in self.deployments.list(machine_set.metadata.namespace)
            if _selects(d, machine_set)
        ]
        found.sort(key=lambda d: (d.metadata.creation_timestamp or "", d.metadata.name))
        return found[0] if found else None

    def sets_of(self, deployment: MachineDeployment) -> list[MachineSet]:
        return [
            s
            for s in self.machine_sets.list(deployment.metadata.namespace)
            if _selects(deployment, s)
        ]

    async def _check_set(self, machine_set: MachineSet, machines: Sequence[Machine]) -> None:
        deployment = self.deployment_of(machine_set)
        bounds = limits(machine_set, deployment, self.safety_up, self.safety_down)
        count = backing_machines(machine_set, machines)
        frozen = is_frozen(machine_set)
        if not frozen and count >= bounds.higher:
            message = (
                f"The number of machines backing MachineSet: {machine_set.metadata.name} is "
                f"{count} >= {bounds.higher} which is the Max-ScaleUp-Limit"
            )
            await self._freeze_set(machine_set, OVERSHOOTING_REPLICA_COUNT, message)
            if deployment is not None:
                await self._freeze_deployment(deployment, OVERSHOOTING_REPLICA_COUNT, message)
            self.events.record(
                machine_set,
                "Normal",
                FREEZE_EVENT,
                f"SafetyController: Froze MachineSet {machine_set.metadata.name} due to "
                "replica overshooting",
            )
            log.warning("froze machine set", machine_set=machine_set.metadata.name, machines=count)
        elif count <= bounds.lower and (frozen or machine_set.condition(MACHINE_SET_FROZEN)):
            if deployment is not None:
                await self._unfreeze_deployment(deployment, UNDERSHOOTING_REPLICA_COUNT)
            await self._unfreeze_set(machine_set)

    async def _sync_deployment(self, deployment: MachineDeployment) -> None:
        """A deployment is frozen exactly when one of its sets is (label or condition)."""
        has_frozen_set = any(
            is_frozen(s) or s.condition(MACHINE_SET_FROZEN) is not None
            for s in self.sets_of(deployment)
        )
        labelled = is_frozen(deployment)
        conditioned = deployment.condition(MACHINE_DEPLOYMENT_FROZEN) is not None
        if has_frozen_set and not (labelled and conditioned):
            await self._freeze_deployment(
                deployment, MACHINE_DEPLOYMENT_STATE_SYNC, STATE_SYNC_MESSAGE
            )
        elif not has_frozen_set and (labelled or conditioned):
            await self._unfreeze_deployment(deployment, MACHINE_DEPLOYMENT_STATE_SYNC)

    async def _unfreeze_deployment_by_annotation(self, deployment: MachineDeployment) -> None:
        await self._unfreeze_deployment(deployment, UNFREEZE_ANNOTATION_REASON)
        for machine_set in self.sets_of(deployment):
            # Its sets are unfrozen by the next step, from the same annotation.
            await self._patch(
                MachineSet,
                machine_set,
                {"metadata": {"annotations": {UNFREEZE_ANNOTATION: FROZEN}}},
            )

    # -- writes: the status first, then the label (MCM's order), each a patch

    async def _freeze_set(self, machine_set: MachineSet, reason: str, message: str) -> None:
        await _conflicts_retried(self._freeze_set_once, machine_set, reason, message)

    async def _unfreeze_set(self, machine_set: MachineSet) -> None:
        await _conflicts_retried(self._unfreeze_set_once, machine_set)

    async def _freeze_deployment(
        self, deployment: MachineDeployment, reason: str, message: str
    ) -> None:
        await _conflicts_retried(self._freeze_deployment_once, deployment, reason, message)

    async def _unfreeze_deployment(self, deployment: MachineDeployment, reason: str) -> None:
        await _conflicts_retried(self._unfreeze_deployment_once, deployment, reason)

    async def _freeze_set_once(self, machine_set: MachineSet, reason: str, message: str) -> None:
        fresh = await self.client.get(
            MachineSet, machine_set.metadata.name, namespace=machine_set.namespace
        )
        conditions = _with_condition(
            [_doc(c) for c in fresh.status.conditions], MACHINE_SET_FROZEN, reason, message
        )
        await self._patch_status(MachineSet, fresh, {"machineSetCondition": conditions})
        await self._patch(MachineSet, fresh, {"metadata": {"labels": {FREEZE_LABEL: FROZEN}}})

    async def _unfreeze_set_once(self, machine_set: MachineSet) -> None:
        fresh = await self.client.get(
            MachineSet, machine_set.metadata.name, namespace=machine_set.namespace
        )
        if fresh.condition(MACHINE_SET_FROZEN) is not None:
            kept = [_doc(c) for c in fresh.status.conditions if c.type != MACHINE_SET_FROZEN]
            await self._patch_status(MachineSet, fresh, {"machineSetCondition": kept})
        await self._patch(MachineSet, fresh, _UNFREEZE_PATCH)
        self.events.record(
            fresh,
            "Normal",
            UNFREEZE_EVENT,
            f"SafetyController: Unfroze MachineSet {fresh.metadata.name}",
        )
        log.info("unfroze machine set", machine_set=fresh.metadata.name)

    async def _freeze_deployment_once(
        self, deployment: MachineDeployment, reason: str, message: str
    ) -> None:
        fresh = await self.client.get(
            MachineDeployment, deployment.metadata.name, namespace=deployment.namespace
        )
        conditions = _with_condition(
            [_doc(c) for c in fresh.status.conditions], MACHINE_DEPLOYMENT_FROZEN, reason, message
        )
        await self._patch_status(MachineDeployment, fresh, {"conditions": conditions})
        await self._patch(
            MachineDeployment, fresh, {"metadata": {"labels": {FREEZE_LABEL: FROZEN}}}
        )
        log.warning("froze machine deployment", deployment=fresh.metadata.name, reason=reason)

    async def _unfreeze_deployment_once(self, deployment: MachineDeployment, reason: str) -> None:
        fresh = await self.client.get(
            MachineDeployment, deployment.metadata.name, namespace=deployment.namespace
        )
        if fresh.condition(MACHINE_DEPLOYMENT_FROZEN) is not None:
            kept = [_doc(c) for c in fresh.status.conditions if c.type != MACHINE_DEPLOYMENT_FROZEN]
            await self._patch_status(MachineDeployment, fresh, {"conditions": kept})
        await self._patch(MachineDeployment, fresh, _UNFREEZE_PATCH)
        log.info("unfroze machine deployment", deployment=fresh.metadata.name, reason=reason)

    async def _patch_status(
        self, kind: type[KubeObject], obj: KubeObject, status: dict[str, Any]
    ) -> None:
        """With the resourceVersion read: conditions are a list a merge patch replaces whole,
        so a concurrent writer's change must make this fail (and be redone next pass)."""
        await self.client.patch(
            kind,
            obj.metadata.name,
            {"metadata": {"resourceVersion": obj.metadata.resource_version}, "status": status},
            namespace=obj.metadata.namespace,
            subresource="status",
        )

    async def _patch(self, kind: type[KubeObject], obj: KubeObject, patch: dict[str, Any]) -> None:
        await self.client.patch(kind, obj.metadata.name, patch, namespace=obj.metadata.namespace)


# How often a freeze or thaw is read and written again after a conflict.
CONFLICT_ATTEMPTS = 5


async def _conflicts_retried(write: Callable[..., Awaitable[None]], *args: Any) -> None:
    """``write`` (which reads the object fresh, then writes it) again after a conflict, as
    MCM's freeze and thaw re-read and update until the write goes through: a conflict only
    means another writer (the MachineSet controller's status) came between the read and the
    write, and leaving the freeze to the next pass can miss it altogether, the overshoot being
    over by then."""
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            await write(*args)
            return
        except ApiError as error:
            if error.status != 409 or attempt == CONFLICT_ATTEMPTS - 1:
                raise
            log.info("safety: conflict, reading again", attempt=attempt + 1)


_UNFREEZE_PATCH: dict[str, Any] = {
    "metadata": {"labels": {FREEZE_LABEL: None}, "annotations": {UNFREEZE_ANNOTATION: None}}
}


def _doc(condition: Any) -> dict[str, Any]:
    doc: dict[str, Any] = msgspec.to_builtins(condition)
    return doc


def _with_condition(
    conditions: list[dict[str, Any]], kind: str, reason: str, message: str
) -> list[dict[str, Any]]:
    """``kind`` set to True with ``reason``/``message``; its transition time kept when it was
    True already (Kubernetes' SetCondition)."""
    stamp = format_time(now())
    old = next((c for c in conditions if c.get("type") == kind), None)
    transition = old.get("lastTransitionTime") if old and old.get("status") == "True" else None
    new: dict[str, Any] = {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition or stamp,
    }
    if kind == MACHINE_DEPLOYMENT_FROZEN:
        new["lastUpdateTime"] = stamp
    return [c for c in conditions if c.get("type") != kind] + [new]


def _selects(deployment: MachineDeployment, machine_set: MachineSet) -> bool:
    """MCM's GetMachineDeploymentsForMachineSet: an empty selector matches nothing, and a set
    without labels belongs to no deployment."""
    labels = machine_set.metadata.labels
    selector = deployment.spec.selector
    return bool(labels) and not selects_all(selector) and selector_matches(selector, labels)
