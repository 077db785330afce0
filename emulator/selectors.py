"""Label and field selectors, parsed once per request and applied per object (and per event)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.errors import ApiError, bad_request

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not has or labels[self.key] not in self.values
        if not has:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if self.op == "gt" else have < want


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _bad(selector: str, why: str) -> ApiError:
    return bad_request(f'unable to parse requirement: {why}: labelSelector "{selector}"')


def _check_key(selector: str, key: str) -> None:
    if not _LABEL_KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise _bad(
            selector,
            f'key: Invalid value: "{key}": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character",
        )


def _check_value(selector: str, value: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise _bad(
            selector,
            f'values[0]: Invalid value: "{value}": a valid label must be an empty string or '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character",
        )


_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*(?:(notin|in)\s*\((.*)\)\s*)?$")
_OP_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s]*)\s*$")


class LabelSelector:
    """A parsed ``labelSelector``; raises 400 BadRequest on malformed input."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requirements: list[Requirement] = []
        if not text.strip():
            return
        for part in _split_top(text):
            if not part.strip():
                raise _bad(text, "found '', expected: identifier")
            self.requirements.append(self._parse(part))

    def _parse(self, part: str) -> Requirement:
        m = _OP_RE.match(part)
        if m:
            key, op, value = m.groups()
            _check_key(self.text, key)
            if op in (">", "<"):
                try:
                    int(value)
                except ValueError:
                    raise _bad(
                        self.text,
                        f"for 'gt', 'lt' operators, the value must be an integer: \"{value}\"",
                    ) from None
                return Requirement(key, "gt" if op == ">" else "lt", (value,))
            _check_value(self.text, value)
            return Requirement(key, "!=" if op == "!=" else "=", (value,))
        m = _SET_RE.match(part)
        if m:
            neg, key, setop, values = m.groups()
            _check_key(self.text, key)
            if setop:
                if neg:
                    raise _bad(self.text, "found '!', expected: identifier")
                vals = tuple(v.strip() for v in values.split(",")) if values.strip() else ()
                for v in vals:
                    _check_value(self.text, v)
                if not vals:
                    raise _bad(self.text, "for 'in', 'notin' operators, values set can't be empty")
                return Requirement(key, setop, vals)
            return Requirement(key, "!" if neg else "exists")
        raise _bad(self.text, f"found '{part.strip()}', expected: valid selector")

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: dict[str, Any]) -> bool:
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


def _str_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string a field selector compares against (missing → "", bools lower-case)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if path == "spec.unschedulable" and cur is None:
        return "false"
    if path == "spec.hostNetwork" and cur is None:
        return "false"
    if path == "source" and isinstance(cur, dict):
        return _str_value(cur.get("component"))
    return _str_value(cur)


class FieldSelector:
    """A parsed ``fieldSelector`` restricted to the fields the resource supports."""

    def __init__(self, text: str, supported: tuple[str, ...]) -> None:
        self.text = text
        self.terms: list[tuple[str, bool, str]] = []  # (field, equal?, value)
        if not text.strip():
            return
        for part in text.split(","):
            m = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
            if not m:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            fld, op, value = m.groups()
            if fld not in ("metadata.name", "metadata.namespace") and fld not in supported:
                raise bad_request(f"field label not supported: {fld}")
            self.terms.append((fld, op != "!=", value))

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((field_value(obj, fld) == value) == eq for fld, eq, value in self.terms)


def combine(label: LabelSelector, fields: FieldSelector) -> Callable[[dict[str, Any]], bool] | None:
    """One predicate for both selectors, or None when nothing filters."""
    if label.empty and fields.empty:
        return None
    if fields.empty:
        return label.matches
    if label.empty:
        return fields.matches
    return lambda o: label.matches(o) and fields.matches(o)
