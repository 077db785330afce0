"""How many machines each set should have: MCM's rolling-update steps (``NewISNewReplicas``,
``reconcileOldMachineSets``), Recreate, and proportional scaling of a rollout (``scale``).

Pure functions of the sets' numbers; each returns the new ``spec.replicas`` per set name for the
sets it changes, and the reconciler writes exactly those.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetrio.controllers.machinedeployment.fenceposts import (
    STRATEGY_IN_PLACE_UPDATE,
    STRATEGY_ROLLING_UPDATE,
)
from kubetrio.controllers.machinedeployment.revisions import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    int_annotation,
)
from kubetrio.controllers.machinedeployment.sets import (
    SetState,
    active,
    by_age,
    by_size_older,
    total_available,
    total_replicas,
)


def new_set_replicas(
    strategy: str,
    replicas: int,
    max_surge: int,
    all_sets: Sequence[SetState],
    new: SetState,
    *,
    manual: bool = False,
) -> int:
    """The new set's next size: Recreate takes all at once; RollingUpdate and an Auto in-place
    update grow it by what the surge allows over the machines there are; a Manual in-place
    update starts it empty (it grows only by the machines moved to it).

    MCM counts the machines the sets report (``status.replicas``): a set being scaled down
    keeps its machines until they are drained and gone. But a set's report lags its growth —
    asked for 2, it may still report 1 — and MCM then grows the new set past the surge. So
    each set counts as the larger of what it was asked for and what it reports."""
    if strategy == STRATEGY_IN_PLACE_UPDATE and manual:
        return 0
    if strategy not in (STRATEGY_ROLLING_UPDATE, STRATEGY_IN_PLACE_UPDATE):
        return replicas
    ceiling = replicas + max_surge
    current = sum(max(s.replicas, s.actual) for s in all_sets)
    if current >= ceiling:
        return new.replicas
    return new.replicas + min(ceiling - current, replicas - new.replicas)


def old_sets_scale_down(
    replicas: int, max_unavailable: int, new: SetState, old: Sequence[SetState]
) -> dict[str, int]:
    """The old sets' new sizes in one rolling step (MCM's ``reconcileOldMachineSets``).

    First unavailable machines of old sets go (they serve nothing, so removing them costs no
    availability), as far as the budget ``all - minAvailable - new set's unavailable`` allows;
    then available ones, oldest set first, down to ``replicas - maxUnavailable`` available.
    """
    old_active = active(old)
    if total_replicas(old_active) == 0:
        return {}
    min_available = replicas - max_unavailable
    all_count = total_replicas([*old_active, new])
    new_unavailable = new.replicas - new.available
    budget = all_count - min_available - new_unavailable
    if budget <= 0:
        return {}
    sizes = {s.name: s.replicas for s in old_active}
    cleaned = 0
    for target in by_age(old_active):
        if cleaned >= budget:
            break
        if target.replicas == target.available:
            continue
        down = min(budget - cleaned, target.replicas - target.available)
        sizes[target.name] = target.replicas - down
        cleaned += down
    available = total_available([*old_active, new])
    if available > min_available:
        wanted = available - min_available
        removed = 0
        for target in by_age(old_active):
            if removed >= wanted:
                break
            size = sizes[target.name]
            if size == 0:
                continue
            down = min(size, wanted - removed)
            sizes[target.name] = size - down
            removed += down
    return {name: size for name, size in sizes.items() if size != _size_of(old_active, name)}


def _size_of(sets: Sequence[SetState], name: str) -> int:
    return next(s.replicas for s in sets if s.name == name)


def recreate_scale_down(old: Sequence[SetState]) -> dict[str, int]:
    """Recreate: every old set to zero before the new one gets any."""
    return {s.name: 0 for s in old if s.replicas != 0}


def find_active_or_latest(new: SetState | None, old: Sequence[SetState]) -> SetState | None:
    """The one set that has machines, or the newest when none has; None when several have
    (then the rollout is in flight and scaling must be proportional)."""
    if new is None and not old:
        return None
    newest_first = list(reversed(by_age(old)))
    running = active([*newest_first, new])
    if len(running) == 1:
        return running[0]
    if not running:
        return new if new is not None else newest_first[0]
    return None


def is_saturated(replicas: int, new: SetState | None) -> bool:
    """The new set has all replicas, sized for this deployment size, all available."""
    if new is None:
        return False
    desired = int_annotation(new.annotations, DESIRED_REPLICAS_ANNOTATION)
    return new.replicas == replicas and desired == replicas and new.available == replicas


def set_fraction(s: SetState, replicas: int, max_surge: int, status_replicas: int) -> int:
    """The change a set gets when the deployment is resized, in proportion to its share of the
    size it was last scaled for (its max-replicas annotation)."""
    if replicas == 0:
        return -s.replicas
    deployment_total = replicas + max_surge
    annotated = int_annotation(s.annotations, MAX_REPLICAS_ANNOTATION)
    if annotated is None:
        annotated = status_replicas
    if annotated == 0:
        return 0
    return _round_half_away(s.replicas * deployment_total / annotated) - s.replicas


def _round_half_away(value: float) -> int:
    """Go's ``math.Round`` (Kubernetes' ``RoundToInt32``): halves away from zero."""
    whole = int(abs(value) + 0.5)
    return whole if value >= 0 else -whole


def proportion(
    s: SetState, replicas: int, max_surge: int, status_replicas: int, to_add: int, added: int
) -> int:
    if s.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = set_fraction(s, replicas, max_surge, status_replicas)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def scale(
    strategy: str,
    replicas: int,
    max_surge: int,
    status_replicas: int,
    new: SetState | None,
    old: Sequence[SetState],
) -> dict[str, int]:
    """A resize of the deployment: the target sizes of the sets it touches (MCM's ``scale``).

    One active set (or none) takes the whole size; a saturated new set sends the old ones to
    zero; a rolling update in flight spreads the change over the active sets in proportion to
    their sizes, leftovers to the largest, never below zero.
    """
    only = find_active_or_latest(new, old)
    if only is not None:
        return {only.name: replicas}
    if is_saturated(replicas, new):
        return {s.name: 0 for s in active(old)}
    if strategy != STRATEGY_ROLLING_UPDATE:
        return {}
    running = active([*old, new])
    allowed = replicas + max_surge if replicas > 0 else 0
    to_add = allowed - total_replicas(running)
    sizes = {s.name: s.replicas for s in running}
    added = 0
    if to_add > 0:
        if new is not None:
            sizes[new.name] = new.replicas + to_add
        added = to_add
        running_order = running
    else:
        running_order = by_size_older(running)
        for s in running_order:
            share = proportion(s, replicas, max_surge, status_replicas, to_add, added)
            sizes[s.name] = s.replicas + share
            added += share
    if running_order and to_add != 0:
        first = running_order[0].name
        sizes[first] = max(sizes[first] + to_add - added, 0)
    return sizes


def rolling_step(
    replicas: int, max_surge: int, max_unavailable: int, new: SetState, old: Sequence[SetState]
) -> dict[str, int]:
    """One step of a rolling update: grow the new set within the surge if it can grow,
    else shrink old sets within the unavailability budget (MCM's ``rolloutRolling``: a pass
    that scaled up does not also scale down). Empty when the rollout cannot move now."""
    if new.replicas != replicas:
        if new.replicas > replicas:
            return {new.name: replicas}
        size = new_set_replicas(STRATEGY_ROLLING_UPDATE, replicas, max_surge, [*old, new], new)
        if size != new.replicas:
            return {new.name: size}
    return old_sets_scale_down(replicas, max_unavailable, new, old)
