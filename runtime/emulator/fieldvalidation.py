"""The ``fieldValidation`` directive every write takes, whatever checks the fields: what it
asks for, keys given twice in a JSON body, and what the problems found come to (a 400 under
Strict, a ``Warning`` header each under Warn, kube's default, nothing under Ignore). Built-in
kinds (fieldcheck) and custom resources (schema_admit) find their problems differently and
answer the same way.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrio.runtime.emulator import errors

_MODES = ("Ignore", "Warn", "Strict")


def mode(query: dict[str, str]) -> str:
    """The requested directive; Warn when absent, as the apiserver defaults it."""
    value = query.get("fieldValidation") or "Warn"
    if value not in _MODES:
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{value}": supported values: '
            '"Ignore", "Strict", "Warn"'
        )
    return value


class _Pairs(list[tuple[str, Any]]):
    """A JSON object kept as its key/value pairs, so repeated keys stay visible."""


def duplicate_fields(body: bytes) -> list[str]:
    """Paths of keys given more than once in a JSON body (none if it does not parse: the
    caller's own decoding reports that)."""
    try:
        tree = json.loads(body, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return []
    out: list[str] = []
    stack: list[tuple[str, Any]] = [("", tree)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, value in node:
                sub = f"{path}.{key}" if path else key
                if key in seen and sub not in out:
                    out.append(sub)
                seen.add(key)
                stack.append((sub, value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
    return sorted(out)


def outcome(directive: str, problems: list[str], strict_prefix: str = "") -> list[tuple[str, str]]:
    """The Warning headers to send; raises the strict decoding error under Strict."""
    if directive == "Ignore" or not problems:
        return []
    if directive == "Strict":
        raise errors.bad_request(strict_prefix + "strict decoding error: " + ", ".join(problems))
    return [errors.warning(p) for p in problems]
