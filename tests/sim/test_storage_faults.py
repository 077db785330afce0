"""Scripted failures of the simulated storage service: parsing with named fields, and the order
rules are used up in."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.sim.storage import FaultError, FaultRule
from kubetrio.sim.storage.faults import Faults


def test_parse_defaults_and_hangs() -> None:
    assert FaultRule.parse({}) == FaultRule(op="any", count=1, status=500)
    hang = FaultRule.parse({"op": "delete", "hangSeconds": 30})
    assert (hang.status, hang.hang_seconds) == (504, 30.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"op": "get"}, "op: one of list, delete, any"),
        ({"op": 1}, "op: must be a string"),
        ({"count": 0}, "count: must be at least 1"),
        ({"count": True}, "count: must be an integer"),
        ({"status": 99}, "status: an HTTP status"),
        ({"hangSeconds": -1}, "hangSeconds: must not be negative"),
        ({"hangSeconds": "1"}, "hangSeconds: must be a number"),
        ({"message": 1}, "message: must be a string"),
        ({"hang": 1}, "unknown field 'hang'"),
    ],
)
def test_parse_errors_name_the_field(body: Any, message: str) -> None:
    with pytest.raises(FaultError, match=message):
        FaultRule.parse(body)


def test_rules_are_used_up_in_order_and_by_operation() -> None:
    faults = Faults()
    faults.add(FaultRule(op="delete", count=2, status=503))
    faults.add(FaultRule(op="any", count=1, status=500))
    assert faults.pending == 3
    first = faults.take("list")
    assert first is not None and first.status == 500  # the delete rule does not apply
    assert faults.take("list") is None
    statuses = [rule.status for rule in (faults.take("delete"), faults.take("delete")) if rule]
    assert statuses == [503, 503]
    assert faults.take("delete") is None and faults.pending == 0
    faults.add(FaultRule(count=3))
    faults.clear()
    assert faults.take("list") is None
