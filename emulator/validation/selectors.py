"""A label selector's rules (``ValidateLabelSelector``), for the kinds that carry one."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import names, objectmeta
from kubetrio.emulator.validation.causes import Causes

OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"]


def label_selector(selector: Any, field: str, causes: Causes) -> None:
    if not isinstance(selector, dict):
        return
    objectmeta.labels(selector.get("matchLabels"), f"{field}.matchLabels", causes)
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, dict):
            continue
        at = f"{field}.matchExpressions[{i}]"
        op, values = expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            causes.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist") and values:
            causes.forbidden(
                f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        elif op not in OPERATORS:
            causes.invalid(f"{at}.operator", op, "not a valid selector operator")
        key = expr.get("key") or ""
        causes.extend(f"{at}.key", key, names.qualified_name(key))
        for j, value in enumerate(values):
            if isinstance(value, str):
                causes.extend(f"{at}.values[{j}]", value, names.label_value(value))
