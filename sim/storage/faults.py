"""Scripted failures of the simulated storage service: "the next N list/delete requests answer
500", or "hang for a minute" (the client's timeout fires first). Rules are consumed in the
order they were added; only the API the controllers use (``list``, ``delete``) is affected."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

OPS = ("list", "delete", "any")


class FaultError(ValueError):
    """A fault rule that does not parse; the message names the field."""


@dataclass(frozen=True, slots=True)
class FaultRule:
    op: str = "any"
    count: int = 1
    status: int = 500
    hang_seconds: float = 0.0  # > 0: answer only after this long (trio time)
    message: str = "scripted failure"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise FaultError(f"op: one of {', '.join(OPS)}, got {self.op!r}")
        if self.count < 1:
            raise FaultError(f"count: must be at least 1, got {self.count}")
        if not 100 <= self.status <= 599:
            raise FaultError(f"status: an HTTP status, got {self.status}")
        if self.hang_seconds < 0:
            raise FaultError(f"hangSeconds: must not be negative, got {self.hang_seconds}")

    @classmethod
    def parse(cls, body: Any) -> FaultRule:
        if not isinstance(body, dict):
            raise FaultError("the fault must be a JSON object")
        unknown = set(body) - {"op", "count", "status", "hangSeconds", "message"}
        if unknown:
            raise FaultError(f"unknown field {sorted(unknown)[0]!r}")
        op = body.get("op", "any")
        count = body.get("count", 1)
        status = body.get("status", 504 if body.get("hangSeconds") else 500)
        hang = body.get("hangSeconds", 0)
        message = body.get("message", "scripted failure")
        if not isinstance(op, str):
            raise FaultError("op: must be a string")
        for name, value in (("count", count), ("status", status)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise FaultError(f"{name}: must be an integer")
        if not isinstance(hang, int | float) or isinstance(hang, bool):
            raise FaultError("hangSeconds: must be a number")
        if not isinstance(message, str):
            raise FaultError("message: must be a string")
        return cls(op=op, count=count, status=status, hang_seconds=float(hang), message=message)


class Faults:
    def __init__(self) -> None:
        self._rules: list[FaultRule] = []

    def add(self, rule: FaultRule) -> None:
        self._rules.append(rule)

    def clear(self) -> None:
        self._rules.clear()

    @property
    def pending(self) -> int:
        return sum(rule.count for rule in self._rules)

    def take(self, op: str) -> FaultRule | None:
        """The rule this request of ``op`` falls under, used up by one; None: answer normally."""
        for i, rule in enumerate(self._rules):
            if rule.op in (op, "any"):
                if rule.count <= 1:
                    del self._rules[i]
                else:
                    self._rules[i] = replace(rule, count=rule.count - 1)
                return rule
        return None
