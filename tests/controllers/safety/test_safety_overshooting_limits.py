"""The overshooting guard's arithmetic: MCM's limits and Kubernetes' rounding of a percentage
maxSurge, and a bad maxSurge reported by field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubetrio.api.machineset import MachineDeployment, MachineSet
from kubetrio.controllers.safety.overshooting import Limits, OvershootingGuard, limits, surge


def deployment(replicas: int, max_surge: Any) -> MachineDeployment:
    rolling = {} if max_surge is None else {"rollingUpdate": {"maxSurge": max_surge}}
    return msgspec.convert(
        {"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", **rolling}}},
        MachineDeployment,
    )


def machine_set(replicas: int) -> MachineSet:
    return msgspec.convert({"spec": {"replicas": replicas}}, MachineSet)


@pytest.mark.parametrize(
    ("replicas", "max_surge", "expected"),
    [(4, 1, 1), (4, "25%", 1), (10, "25%", 3), (3, "0%", 0), (200, "10%", 20), (5, None, 0)],
)
def test_surge(replicas: int, max_surge: Any, expected: int) -> None:
    assert surge(deployment(replicas, max_surge)) == expected


def test_a_bad_max_surge_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"spec\.strategy\.rollingUpdate\.maxSurge: .*'lots'"):
        surge(deployment(3, "lots"))


def test_limits_of_a_set_alone_and_of_a_deployment() -> None:
    assert limits(machine_set(3), None, 2, 1) == Limits(higher=8, lower=7)
    assert limits(machine_set(3), deployment(3, 1), 2, 1) == Limits(higher=6, lower=5)
    assert limits(machine_set(0), None, 0, 0) == Limits(higher=0, lower=0)


class _Listed:
    def __init__(self, *objs: Any) -> None:
        self.objs = list(objs)

    def list(self, namespace: str | None = None) -> list[Any]:
        return list(self.objs)


def _guard(deployments: list[MachineDeployment], sets: list[MachineSet]) -> OvershootingGuard:
    guard = OvershootingGuard.__new__(OvershootingGuard)
    guard.deployments = _Listed(*deployments)  # type: ignore[assignment]
    guard.machine_sets = _Listed(*sets)  # type: ignore[assignment]
    return guard


def test_an_empty_selector_adopts_no_set_and_a_set_without_labels_has_no_deployment() -> None:
    """MCM's GetMachineDeploymentsForMachineSet: an empty selector matches nothing (else one
    bad deployment would lend its replicas to every set's limits), and neither does a set
    without labels."""
    selects_all = msgspec.convert({"spec": {"replicas": 0, "selector": {}}}, MachineDeployment)
    pool = msgspec.convert(
        {"spec": {"replicas": 3, "selector": {"matchLabels": {"pool": "a"}}}}, MachineDeployment
    )
    labelled = msgspec.convert(
        {"metadata": {"labels": {"pool": "a"}}, "spec": {"replicas": 5}}, MachineSet
    )
    bare = machine_set(5)
    guard = _guard([selects_all, pool], [labelled, bare])
    assert guard.deployment_of(labelled) is pool
    assert guard.deployment_of(bare) is None
    assert guard.sets_of(selects_all) == []
    assert guard.sets_of(pool) == [labelled]
