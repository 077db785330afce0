"""The emulator's cheap copies: ``json_copy`` (a msgspec round trip, faithful or deepcopy) and
the per-second creationTimestamp text."""

from __future__ import annotations

import datetime as dt
import math
import time
from typing import Any

import pytest

from kubetrio.emulator.clock import EmuClock, parse_rfc3339
from kubetrio.emulator.jsoncopy import json_copy


@pytest.mark.parametrize(
    "tree",
    [
        {"a": [1, {"b": "c"}], "f": 1.5, "z": None, "t": True, "u": "é\u2028"},
        {"big": 2**70},
        {"tuple": (1, 2)},
        {1: "int key"},
        {"when": dt.datetime(2020, 1, 1, tzinfo=dt.UTC)},
    ],
)
def test_copy_is_equal_of_the_same_types_and_independent(tree: dict[Any, Any]) -> None:
    twin = json_copy(tree)
    assert twin == tree
    assert [type(v) for v in twin.values()] == [type(v) for v in tree.values()]
    assert [type(k) for k in twin] == [type(k) for k in tree]
    twin.clear()
    assert tree  # the original untouched


def test_nested_lists_are_copies() -> None:
    tree = {"a": [[1], {"b": [2]}]}
    twin = json_copy(tree)
    twin["a"][0].append(9)
    twin["a"][1]["b"].append(9)
    assert tree == {"a": [[1], {"b": [2]}]}


def test_nan_survives_through_the_fallback() -> None:
    assert math.isnan(json_copy({"x": math.nan})["x"])


def test_deeper_than_deepcopy_can_walk() -> None:
    """600 levels: past copy.deepcopy's recursion, within msgspec's."""
    tree: dict[str, Any] = {}
    node = tree
    for _ in range(600):
        node["a"] = {}
        node = node["a"]
    twin = json_copy(tree)
    assert twin == tree and twin is not tree


def test_wall_timestamp_is_the_current_second() -> None:
    before = int(time.time())
    text = EmuClock.wall_rfc3339()
    after = int(time.time())
    parsed = parse_rfc3339(text)
    assert parsed is not None
    assert before <= parsed.timestamp() <= after
