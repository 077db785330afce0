"""Matching a structured ``metav1.LabelSelector`` against labels, as the API server does.

An empty selector matches everything; a missing (None) selector matches nothing — the PDB and
workload semantics. Operators: In, NotIn, Exists, DoesNotExist.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubetrio.api.policy import LabelSelector, LabelSelectorRequirement


class SelectorError(ValueError):
    """A label selector the API server would refuse (unknown operator, values where none
    belong); the message names the requirement."""


def _requirement_matches(req: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    if op == "In":
        return req.key in labels and labels[req.key] in req.values
    if op == "NotIn":
        return req.key not in labels or labels[req.key] not in req.values
    if op == "Exists":
        return req.key in labels
    if op == "DoesNotExist":
        return req.key not in labels
    raise SelectorError(f"label selector operator {op!r} for key {req.key!r} is not valid")


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    return all(_requirement_matches(req, labels) for req in selector.match_expressions)


def selects_all(selector: LabelSelector | None) -> bool:
    """An empty selector: a controller's selector must never claim everything in its
    namespace (controllers treat it as matching nothing; client-go's ``selector.Empty()``)."""
    return selector is not None and not selector.match_labels and not selector.match_expressions
