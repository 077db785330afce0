"""The testing kit's pure decisions: which error a nursery's group stands for, which kubectl
commands hold the mock clock, what install_crds accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kubetrio.testing.crds import _documents
from kubetrio.testing.kubectl import WAITING_COMMANDS
from kubetrio.testing.manager import _sole_error


def cancelled() -> trio.Cancelled:
    return trio.Cancelled._create()  # type: ignore[attr-defined]


def test_one_error_among_cancellations_is_the_error() -> None:
    boom = RuntimeError("boom")
    group = BaseExceptionGroup("outer", [cancelled(), ExceptionGroup("inner", [boom])])
    assert _sole_error(group) is boom


def test_two_errors_stay_a_group() -> None:
    group = ExceptionGroup("two", [RuntimeError("a"), ValueError("b")])
    assert _sole_error(group) is None


def test_only_commands_that_wait_on_the_cluster_leave_the_clock_free() -> None:
    assert {"wait", "delete", "drain", "rollout"} == WAITING_COMMANDS
    assert "apply" not in WAITING_COMMANDS and "get" not in WAITING_COMMANDS


def test_crd_sources(tmp_path: Path) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
    path = tmp_path / "two.yaml"
    path.write_text("kind: CustomResourceDefinition\n---\n---\nkind: CustomResourceDefinition\n")
    assert _documents(crd) == [crd]
    assert len(_documents(path)) == 2
    path.write_text("kind: Secret\n")
    with pytest.raises(ValueError, match=r"two.yaml holds kind 'Secret', not a Custom"):
        _documents(path)
