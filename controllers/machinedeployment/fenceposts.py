"""maxSurge / maxUnavailable resolution, as Kubernetes' ``intstr`` and MCM's ``ResolveFenceposts``.

Percentages scale with the desired replicas: surge rounds up, unavailability rounds down, so a
percentage never lets a rollout take down more than it says; when both come out 0 the rollout
could never move, so unavailability becomes 1.
"""

from __future__ import annotations

from dataclasses import dataclass

STRATEGY_RECREATE = "Recreate"
STRATEGY_ROLLING_UPDATE = "RollingUpdate"
INT32_MAX = 2**31 - 1


class SpecError(ValueError):
    """A deployment field that cannot be acted on; the message names the field."""


def scaled_value(value: int | str | None, total: int, round_up: bool, field: str) -> int:
    """An int, or a percentage of ``total`` ("25%"): ``intstr.GetScaledValueFromIntOrPercent``."""
    if value is None:
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
) -> Fenceposts:
    """MCM's ``MaxSurge`` and ``MaxUnavailable`` together: 0/0 for Recreate, unavailability
    never above replicas (and 0 when there are none)."""
    if strategy == STRATEGY_RECREATE:
        return Fenceposts(0, 0)
    if strategy != STRATEGY_ROLLING_UPDATE:
        raise SpecError(
            f'spec.strategy.type: "{strategy}" must be one of [{STRATEGY_RECREATE} '
            f"{STRATEGY_ROLLING_UPDATE}]"
        )
    surge = scaled_value(max_surge, replicas, True, "spec.strategy.rollingUpdate.maxSurge")
    unavailable = scaled_value(
        max_unavailable, replicas, False, "spec.strategy.rollingUpdate.maxUnavailable"
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    if replicas == 0:
        unavailable = 0
    return Fenceposts(surge, min(unavailable, replicas))
