"""MCM's rule for status writes that carry no news: descriptions compared by its Levenshtein
ratio (in UTF-8 bytes, as Go's strings), and a lastOperation older than 30 min written anyway."""

from __future__ import annotations

import math

import pytest

from kubetrio.controllers.machine.status import (
    REFRESH_AFTER,
    SIMILARITY_THRESHOLD,
    similar_descriptions,
    similarity_ratio,
)


@pytest.mark.parametrize(
    ("a", "b", "ratio"),
    [
        ("kitten", "sitting", 1 - 3 / 6.5),
        ("abc", "abc", 1.0),
        ("abc", "", 1 - 3 / 1.5),
        ("é", "e", 1 - 2 / 1.5),  # two bytes against one: Go counts bytes, not characters
        ("request 0123", "request 4567", 1 - 4 / 12),
    ],
)
def test_ratio_is_mcms(a: str, b: str, ratio: float) -> None:
    assert similarity_ratio(a, b) == pytest.approx(ratio)


def test_threshold_and_refresh_age_are_mcms() -> None:
    """MCM's values (the e2e test runs with a shorter refresh age to save real time)."""
    assert SIMILARITY_THRESHOLD == 0.75
    assert REFRESH_AFTER == 30 * 60


def test_two_empty_strings_give_go_s_nan() -> None:
    assert math.isnan(similarity_ratio("", ""))
    assert similar_descriptions("", "")  # equal all the same


def test_descriptions_differing_in_a_request_id_are_similar() -> None:
    base = (
        "Cloud provider message - machine codes error: code = [Unavailable] message = "
        "[instance quota exceeded in eu-1 (request id {})]"
    )
    assert similar_descriptions(base.format("9f2c01d4e5a6b7c8"), base.format("0a1b2c3d4e5f6071"))
    assert not similar_descriptions("Creating machine on cloud provider", base.format("x"))


def test_descriptions_of_two_deletion_steps_are_never_similar() -> None:
    """The step marker is the deletion flow's state: a write that moves it is never skipped."""
    drain = "Drain failed due to - timeout. Will retry in next sync. Initiate node drain"
    forced = "Drain failed due to - timeout. Will retry in next sync. Initiate VM deletion"
    assert similarity_ratio(drain, forced) > 0.75
    assert not similar_descriptions(drain, forced)
