"""The list of broken rules one validation pass collects (field.ErrorList's shape): each cause
renders as kube renders it, so messages and ``details.causes`` match a cluster's."""

from __future__ import annotations

import json
from typing import Any


class GoValue(str):
    """A value already rendered as field.Error prints it (a Go struct marshalled with its Go
    field names, say), shown as it stands."""


def _go_value(value: Any) -> str:
    """A value as field.Error prints it: strings quoted, numbers and booleans bare, maps and
    lists as compact JSON with sorted keys (Go's json.Marshal), nil as null."""
    if isinstance(value, GoValue):
        return str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


class Causes:
    """(cause type, field path, message) triples in the order the rules found them."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def required(self, field: str, detail: str = "") -> None:
        self.items.append(("FieldValueRequired", field, _join("Required value", detail)))

    def invalid(self, field: str, value: Any, detail: str = "") -> None:
        self.items.append(
            ("FieldValueInvalid", field, _join(f"Invalid value: {_go_value(value)}", detail))
        )

    def unsupported(self, field: str, value: Any, allowed: list[str]) -> None:
        quoted = ", ".join(json.dumps(a) for a in allowed)
        self.items.append(
            (
                "FieldValueNotSupported",
                field,
                f"Unsupported value: {_go_value(value)}: supported values: {quoted}",
            )
        )

    def forbidden(self, field: str, detail: str) -> None:
        self.items.append(("FieldValueForbidden", field, _join("Forbidden", detail)))

    def not_found(self, field: str, value: Any) -> None:
        self.items.append(("FieldValueNotFound", field, f"Not found: {_go_value(value)}"))

    def duplicate(self, field: str, value: Any) -> None:
        self.items.append(("FieldValueDuplicate", field, f"Duplicate value: {_go_value(value)}"))

    def too_long(self, field: str, limit: int) -> None:
        self.items.append(
            ("FieldValueTooLong", field, f"Too long: may not be more than {limit} bytes")
        )

    def too_many(self, field: str, actual: int, limit: int) -> None:
        self.items.append(
            ("FieldValueTooMany", field, f"Too many: {actual}: must have at most {limit} items")
        )


def _join(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head
