"""metav1.LabelSelector as workloads use it: its validation (ValidateLabelSelector), whether
it converts to a selector at all (LabelSelectorAsSelector), what it matches (null: nothing,
``{}``: everything) and its text form (a Scale's ``status.selector``)."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator.selectors import Requirement
from kubetrio.emulator.validation import identifiers
from kubetrio.emulator.validation.causes import Causes, GoValue

_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _expressions(selector: dict[str, Any]) -> list[dict[str, Any]]:
    items = selector.get("matchExpressions")
    return [e for e in items if isinstance(e, dict)] if isinstance(items, list) else []


def _match_labels(selector: dict[str, Any]) -> dict[str, Any]:
    labels = selector.get("matchLabels")
    return labels if isinstance(labels, dict) else {}


def validate(selector: Any, path: str, causes: Causes) -> None:
    if not isinstance(selector, dict):
        return
    identifiers.labels(causes, f"{path}.matchLabels", selector.get("matchLabels"))
    for i, expr in enumerate(_expressions(selector)):
        at = f"{path}.matchExpressions[{i}]"
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                causes.required(
                    f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.forbidden(
                    f"{at}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
        else:
            causes.invalid(f"{at}.operator", op, "not a valid selector operator")
        key = expr.get("key")
        for problem in identifiers.label_key_problems(key if isinstance(key, str) else ""):
            causes.invalid(f"{at}.key", key, problem)


def convertible(selector: Any) -> bool:
    """Whether LabelSelectorAsSelector takes it (known operators, values as they require)."""
    if not isinstance(selector, dict):
        return True
    for expr in _expressions(selector):
        op = expr.get("operator")
        values = expr.get("values") or []
        if op not in _OPS or (op in ("In", "NotIn")) != bool(values):
            return False
    return True


def is_empty(selector: Any) -> bool:
    return isinstance(selector, dict) and not _match_labels(selector) and not _expressions(selector)


def matches(selector: Any, labels: Any) -> bool:
    if not isinstance(selector, dict):
        return False
    have = labels if isinstance(labels, dict) else {}
    for key, value in _match_labels(selector).items():
        if have.get(key) != value:
            return False
    for expr in _expressions(selector):
        req = Requirement(
            str(expr.get("key", "")),
            _OPS.get(str(expr.get("operator")), ""),
            tuple(expr.get("values") or ()),
        )
        if not req.matches(have):
            return False
    return True


def go_value(selector: Any) -> GoValue:
    """The selector as field.Error prints it: metav1.LabelSelector marshalled, fields in
    their Go order and empty ones left out."""
    if not isinstance(selector, dict):
        return GoValue("null")
    parts = []
    labels = _match_labels(selector)
    if labels:
        parts.append('"matchLabels":' + json.dumps(labels, separators=(",", ":"), sort_keys=True))
    exprs = _expressions(selector)
    if exprs:
        rendered = []
        for e in exprs:
            fields = [f'"key":{json.dumps(e.get("key", ""))}']
            fields.append(f'"operator":{json.dumps(e.get("operator", ""))}')
            if e.get("values"):
                fields.append(f'"values":{json.dumps(e["values"], separators=(",", ":"))}')
            rendered.append("{" + ",".join(fields) + "}")
        parts.append('"matchExpressions":[' + ",".join(rendered) + "]")
    return GoValue("{" + ",".join(parts) + "}")


def text(selector: Any) -> str:
    """labels.Selector's String(): requirements sorted by key, comma-separated."""
    if not isinstance(selector, dict):
        return ""
    reqs: list[tuple[str, str]] = []
    for key, value in _match_labels(selector).items():
        reqs.append((str(key), f"{key}={value}"))
    for e in _expressions(selector):
        key, op = str(e.get("key", "")), e.get("operator")
        values = ",".join(sorted(str(v) for v in e.get("values") or []))
        if op == "In":
            reqs.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
    return ",".join(r for _, r in sorted(reqs, key=lambda r: r[0]))
