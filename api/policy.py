"""policy/v1 PodDisruptionBudget, as far as drain reads it."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import KindInfo, lookup


class LabelSelectorRequirement(Model, kw_only=True):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class LabelSelector(Model, kw_only=True):
    match_labels: dict[str, str] = {}
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class PodDisruptionBudgetSpec(Model, kw_only=True):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


class PodDisruptionBudgetStatus(Model, kw_only=True):
    observed_generation: int = 0
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("policy/v1", "PodDisruptionBudget")
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)
