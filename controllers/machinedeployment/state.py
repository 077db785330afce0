"""One reconcile pass's view of a deployment: the object as the cache has it, its resolved
bounds and its MachineSets; the stored object itself (raw, every field) is read only when a set
is made from its template, and must be the version the cache showed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubetrio.api.machineset import (
    ORCHESTRATION_AUTO,
    ORCHESTRATION_MANUAL,
    MachineDeployment,
    MachineSet,
)
from kubetrio.controllers.machinedeployment.fenceposts import (
    STRATEGY_IN_PLACE_UPDATE,
    STRATEGY_ROLLING_UPDATE,
    Fenceposts,
    SpecError,
    resolve,
)
from kubetrio.controllers.machinedeployment.hashing import equal_ignore_hash
from kubetrio.controllers.machinedeployment.progress import Spec
from kubetrio.controllers.machinedeployment.revisions import revision
from kubetrio.controllers.machinedeployment.sets import SetState, by_age
from kubetrio.runtime.util.labels import SelectorError, selector_matches


def set_state(machine_set: MachineSet) -> SetState:
    return SetState(
        name=machine_set.name,
        replicas=machine_set.spec.replicas,
        created=machine_set.metadata.creation_timestamp or "",
        actual=machine_set.status.replicas,
        ready=machine_set.status.ready_replicas,
        available=machine_set.status.available_replicas,
        annotations=dict(machine_set.metadata.annotations),
        deleting=machine_set.deleting,
        preserved_failed=machine_set.status.preserved_failed_replicas,
    )


def validate(deployment: MachineDeployment) -> Fenceposts:
    """The bounds, or SpecError naming the field (MCM's ``ValidateMachineDeployment``)."""
    spec = deployment.spec
    if spec.replicas < 0:
        raise SpecError("spec.replicas: Replicas has to be a whole number")
    if spec.auto_preserve_failed_machine_max < 0:
        raise SpecError("spec.autoPreserveFailedMachineMax: must be a whole number")
    rolling = spec.strategy.rolling_update
    if spec.strategy.type == STRATEGY_ROLLING_UPDATE and rolling is None:
        raise SpecError(
            "spec.strategy.rollingUpdate: RollingUpdate parameter cannot be nil for rolling "
            "update strategy"
        )
    in_place = spec.strategy.in_place_update
    manual = False
    if spec.strategy.type == STRATEGY_IN_PLACE_UPDATE:
        if in_place is None:
            raise SpecError(
                "spec.strategy.inPlaceUpdate: InPlaceUpdate parameter cannot be nil for in-place "
                "update strategy"
            )
        if in_place.orchestration_type not in (ORCHESTRATION_AUTO, ORCHESTRATION_MANUAL):
            raise SpecError(
                f"spec.strategy.inPlaceUpdate.orchestrationType: "
                f'"{in_place.orchestration_type}" orchestrationType must be either Auto or Manual'
            )
        manual = in_place.orchestration_type == ORCHESTRATION_MANUAL
        rolling = in_place
    selector = spec.selector
    if selector is not None:
        labels = spec.template.metadata.labels
        if any(labels.get(k) != v for k, v in selector.match_labels.items()):
            raise SpecError(
                "spec.selector.matchLabels: is not matching with spec.template.metadata.labels"
            )
        try:
            selector_matches(selector, labels)
        except SelectorError as error:
            raise SpecError(f"spec.selector: {error}") from None
    if not spec.template.spec.class_.name:
        raise SpecError("spec.template.spec.class.name: Name is required")
    return resolve(
        spec.strategy.type,
        spec.replicas,
        rolling.max_surge if rolling else None,
        rolling.max_unavailable if rolling else None,
        manual=manual,
    )


def template_of(obj: MachineDeployment | MachineSet) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.to_builtins(obj.spec.template)
    return result


class StaleCache(RuntimeError):
    """The cache is behind the stored object: the pass is retried once it caught up."""


RawReader = Callable[[MachineDeployment], Awaitable[dict[str, Any]]]


@dataclass
class Pass:
    deployment: MachineDeployment
    read_raw: RawReader
    bounds: Fenceposts
    sets: list[MachineSet]
    # The status being built up this pass (wire shape); written once if it changed.
    status: dict[str, Any] = field(default_factory=dict)
    # Seconds until the progress deadline needs another look (None: no deadline pending).
    requeue: float | None = None
    _raw: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.deployment.name

    @property
    def namespace(self) -> str:
        return self.deployment.namespace

    @property
    def replicas(self) -> int:
        return self.deployment.spec.replicas

    @property
    def strategy(self) -> str:
        return self.deployment.spec.strategy.type

    @property
    def manual(self) -> bool:
        """An in-place update whose machines the user selects."""
        in_place = self.deployment.spec.strategy.in_place_update
        return (
            self.strategy == STRATEGY_IN_PLACE_UPDATE
            and in_place is not None
            and in_place.orchestration_type == ORCHESTRATION_MANUAL
        )

    async def raw_spec(self) -> Mapping[str, Any]:
        """The stored spec, whole: a set's template is copied from it, including fields the
        typed view leaves out."""
        if self._raw is None:
            raw = await self.read_raw(self.deployment)
            stored = (raw.get("metadata") or {}).get("resourceVersion")
            if stored != self.deployment.resource_version:
                raise StaleCache(
                    f"machine deployment {self.name}: cache at resourceVersion "
                    f"{self.deployment.resource_version}, stored {stored}"
                )
            self._raw = raw
        spec: Mapping[str, Any] = self._raw.get("spec") or {}
        return spec

    @property
    def collision_count(self) -> int | None:
        count = self.status.get("collisionCount")
        return count if isinstance(count, int) else None

    def spec(self) -> Spec:
        return Spec(
            name=self.name,
            replicas=self.replicas,
            generation=self.deployment.metadata.generation,
            max_unavailable=self.bounds.max_unavailable,
            progress_deadline_seconds=self.deployment.spec.progress_deadline_seconds,
        )

    def new_set(self) -> MachineSet | None:
        """The oldest set with the deployment's template (MCM's ``FindNewMachineSet``)."""
        wanted = template_of(self.deployment)
        ordered = by_age(set_state(s) for s in self.sets)
        by_name = {s.name: s for s in self.sets}
        for state in ordered:
            candidate = by_name[state.name]
            if equal_ignore_hash(template_of(candidate), wanted):
                return candidate
        return None

    def old_sets(self, new: MachineSet | None) -> list[MachineSet]:
        return [s for s in self.sets if new is None or s.metadata.uid != new.metadata.uid]

    def replace(self, updated: MachineSet) -> None:
        """Keep this pass's picture current after a write, so later steps see it."""
        self.sets = [updated if s.metadata.uid == updated.metadata.uid else s for s in self.sets]


def states(sets: Sequence[MachineSet]) -> list[SetState]:
    return [set_state(s) for s in sets]


def set_revisions(sets: Sequence[MachineSet]) -> list[Mapping[str, str]]:
    return [s.metadata.annotations for s in sets]


def revision_of(machine_set: MachineSet) -> int | None:
    return revision(machine_set.metadata.annotations)
