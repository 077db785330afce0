"""Which garbage-collection finalizers a DELETE leaves on an object (the apiserver's
deletionFinalizersForGarbageCollection), as a table."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.api.registry import BUILTIN_KINDS
from kubetrio.emulator.gc.policy import (
    JOB_DELETE_WARNING,
    delete_warning,
    deletion_finalizers,
)
from kubetrio.emulator.kinds import ResourceType, from_kind_info


def rt(plural: str) -> ResourceType:
    return next(from_kind_info(k) for k in BUILTIN_KINDS if k.plural == plural)


@pytest.mark.parametrize(
    ("plural", "finalizers", "propagation", "orphan", "want"),
    [
        ("configmaps", [], None, None, None),  # default: background, nothing to record
        ("configmaps", [], "Background", None, None),
        ("configmaps", [], "Foreground", None, ["foregroundDeletion"]),
        ("configmaps", [], "Orphan", None, ["orphan"]),
        ("configmaps", ["a/b"], "Orphan", None, ["a/b", "orphan"]),
        ("configmaps", [], None, True, ["orphan"]),
        ("configmaps", ["orphan"], None, False, []),
        ("configmaps", ["orphan"], None, None, None),  # an existing choice stands
        ("configmaps", ["foregroundDeletion"], None, None, None),
        ("configmaps", ["orphan", "x/y"], "Foreground", None, ["x/y", "foregroundDeletion"]),
        ("configmaps", ["foregroundDeletion"], "Background", None, []),
        ("jobs", [], None, None, ["orphan"]),  # batch/v1 Jobs orphan their pods by default
        ("jobs", [], "Background", None, None),
        ("deployments", [], None, None, None),
    ],
)
def test_deletion_finalizers(
    plural: str,
    finalizers: list[str],
    propagation: str | None,
    orphan: bool | None,
    want: list[str] | None,
) -> None:
    md: dict[str, Any] = {"finalizers": finalizers}
    assert deletion_finalizers(rt(plural), md, propagation, orphan) == want


def test_only_a_job_left_to_its_default_is_warned_about() -> None:
    assert delete_warning(rt("jobs"), None, None) == JOB_DELETE_WARNING
    assert delete_warning(rt("jobs"), "Orphan", None) is None
    assert delete_warning(rt("jobs"), None, False) is None
    assert delete_warning(rt("configmaps"), None, None) is None
