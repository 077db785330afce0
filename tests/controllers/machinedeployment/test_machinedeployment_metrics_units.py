"""The label and value conversions the deployment gauges share with MCM's Go code."""

from __future__ import annotations

import pytest

from kubetrio.controllers.machinedeployment.metrics import int_value
from kubetrio.controllers.machineset.metrics import created_at


@pytest.mark.parametrize(
    ("value", "expected"), [(3, 3), ("4", 4), ("25%", 0), ("lots", 0), (None, 0), (0, 0)]
)
def test_int_value_reads_percentages_as_zero_like_go(
    value: int | str | None, expected: int
) -> None:
    assert int_value(value) == expected


def test_created_at_is_unix_seconds() -> None:
    assert created_at("2026-11-24T07:00:00Z") == "1795503600"
    assert created_at(None) == "-62135596800"
