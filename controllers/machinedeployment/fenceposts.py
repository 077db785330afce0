"""maxSurge / maxUnavailable resolution, as Kubernetes' ``intstr`` and MCM's ``ResolveFenceposts``.

Percentages scale with the desired replicas: surge rounds up, unavailability rounds down, so a
percentage never lets a rollout take down more than it says; when both come out 0 the rollout
could never move, so unavailability becomes 1.
"""

from __future__ import annotations

from dataclasses import dataclass

STRATEGY_RECREATE = "Recreate"
STRATEGY_ROLLING_UPDATE = "RollingUpdate"
STRATEGY_IN_PLACE_UPDATE = "InPlaceUpdate"
STRATEGIES = (STRATEGY_IN_PLACE_UPDATE, STRATEGY_RECREATE, STRATEGY_ROLLING_UPDATE)  # sorted
INT32_MAX = 2**31 - 1


class SpecError(ValueError):
    """A deployment field that cannot be acted on; the message names the field."""


def scaled_value(
    value: int | str | None, total: int, round_up: bool, field: str, *, required: bool = True
) -> int:
    """An int, or a percentage of ``total`` ("25%"): ``intstr.GetScaledValueFromIntOrPercent``.
    An unset value is 0 where it is not ``required`` (MCM's in-place bounds)."""
    if value is None:
        if not required:
            return 0
        raise SpecError(f"{field}: required for the RollingUpdate strategy")
    if isinstance(value, bool):
        raise SpecError(f"{field}: {value!r} is neither an integer nor a percentage")
    if isinstance(value, int):
        result = value
    else:
        digits = value[:-1] if value.endswith("%") else ""
        if not digits or not digits.lstrip("-").isdigit():
            raise SpecError(f'{field}: "{value}" is not a percentage (like "25%") nor an integer')
        percent = int(digits)
        # Integer arithmetic, so 29% of 100 is 29 and never 28.999… rounded down.
        quotient, remainder = divmod(percent * total, 100)
        result = quotient + (1 if round_up and remainder else 0)
    if result < 0 or result > INT32_MAX:
        raise SpecError(f"{field}: {value!r} resolves to {result}, outside 0…{INT32_MAX}")
    return result


@dataclass(frozen=True, slots=True)
class Fenceposts:
    """A deployment's resolved rollout bounds for its current replicas."""

    max_surge: int
    max_unavailable: int


def resolve(
    strategy: str,
    replicas: int,
    max_surge: int | str | None,
    max_unavailable: int | str | None,
    *,
    manual: bool = False,
) -> Fenceposts:
    """MCM's ``MaxSurge`` and ``MaxUnavailable`` together: 0/0 for Recreate, unavailability
    never above replicas (and 0 when there are none). A Manual in-place update never surges:
    its new set only grows by the machines the user's selection moves to it."""
    if strategy == STRATEGY_RECREATE:
        return Fenceposts(0, 0)
    if strategy not in STRATEGIES:
        raise SpecError(f'spec.strategy.type: "{strategy}" must be one of [{" ".join(STRATEGIES)}]')
    rolling = strategy == STRATEGY_ROLLING_UPDATE
    where = "spec.strategy.rollingUpdate" if rolling else "spec.strategy.inPlaceUpdate"
    surge = scaled_value(max_surge, replicas, True, f"{where}.maxSurge", required=rolling)
    unavailable = scaled_value(
        max_unavailable, replicas, False, f"{where}.maxUnavailable", required=rolling
    )
    if manual:
        surge = 0
    if surge == 0 and unavailable == 0:
        unavailable = 1
    if replicas == 0:
        unavailable = 0
    return Fenceposts(surge, min(unavailable, replicas))
