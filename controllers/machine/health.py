"""When MCM calls a machine's node healthy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol


class Condition(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def status(self) -> str: ...


def is_healthy(conditions: Iterable[Condition], bad_condition_types: Sequence[str]) -> bool:
    """Ready is True and none of the watched problem conditions (``--node-conditions``:
    KernelDeadlock, ReadonlyFilesystem, DiskPressure, NetworkUnavailable by default) is anything
    but False. No conditions at all is not healthy: the node never reported."""
    by_type = {condition.type: condition.status for condition in conditions}
    if by_type.get("Ready") != "True":
        return False
    return all(by_type.get(kind, "False") == "False" for kind in bad_condition_types)
