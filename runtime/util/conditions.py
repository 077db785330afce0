"""Status conditions with ``meta.SetStatusCondition`` semantics, on immutable tuples.

A condition's ``lastTransitionTime`` moves only when its ``status`` changes, so "how long has
this been False" stays answerable; reason, message and observedGeneration follow every call.
Functions return new tuples (typed views hold tuples, and objects from the cache are shared):
compare the result with the input to know whether a status write is due.

Example::

    from kubetrio.runtime import set_condition

    conditions = set_condition(
        greeting.status.conditions, "Ready", "False", "ConfigMapMissing",
        "waiting for the ConfigMap", greeting.metadata.generation,
    )
    if conditions != greeting.status.conditions:
        await client.patch(Greeting, greeting.name, {"status": {"conditions":
            msgspec.to_builtins(conditions)}}, namespace=greeting.namespace, subresource="status")
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import msgspec

from kubetrio.api.condition import Condition, ConditionStatus
from kubetrio.api.meta import format_time
from kubetrio.runtime.util import clock


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    """The condition of type ``type_``, if present."""
    return next((c for c in conditions if c.type == type_), None)


def set_condition(
    conditions: Sequence[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    observed_generation: int = 0,
    *,
    now: dt.datetime | None = None,
) -> tuple[Condition, ...]:
    """``conditions`` with ``type_`` set: appended when new, else updated where it stands.
    The transition time is ``now`` (default: the run's clock) for a new condition or a changed
    status, and kept otherwise."""
    stamp = format_time(now or clock.now())
    current = find_condition(conditions, type_)
    if current is None:
        return (
            *conditions,
            Condition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=stamp,
                observed_generation=observed_generation,
            ),
        )
    updated = msgspec.structs.replace(
        current,
        status=status,
        reason=reason,
        message=message,
        observed_generation=observed_generation,
        last_transition_time=current.last_transition_time if current.status == status else stamp,
    )
    return tuple(updated if c is current else c for c in conditions)


def remove_condition(conditions: Sequence[Condition], type_: str) -> tuple[Condition, ...]:
    """``conditions`` without ``type_`` (the same entries when it is absent)."""
    return tuple(c for c in conditions if c.type != type_)


def is_condition_true(conditions: Sequence[Condition], type_: str) -> bool:
    """``meta.IsStatusConditionTrue``: present with status True."""
    current = find_condition(conditions, type_)
    return current is not None and current.status == "True"
