"""The ``fieldValidation`` directive every write takes, whatever checks the fields: what it
asks for, keys given twice in a JSON body, and what the problems found come to (a 400 under
Strict, a ``Warning`` header each under Warn, kube's default, nothing under Ignore). Built-in
kinds (fieldcheck) and custom resources (schema_admit) find their problems differently and
answer the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubetrio.emulator import errors

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


# Where a JSON key ends: every key matches once; a string value holding `":` adds a match.
_KEY_END = re.compile(rb'"\s*:')


def _key_count(tree: Any) -> int:
    count, stack = 0, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            count += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def duplicate_fields(body: bytes, decoded: Any = None) -> list[str]:
    """Paths of keys given more than once in a JSON body (none if it does not parse: the
    caller's own decoding reports that). With ``decoded`` (the body as already decoded, before
    any change) the common case is cheap: when the body shows as many key ends as the decoded
    tree holds keys, no key was repeated (a repeat collapses into one decoded key, and stray
    matches inside strings only make the body's count larger), so the full re-parse is
    skipped."""
    if decoded is not None and len(_KEY_END.findall(body)) == _key_count(decoded):
        return []
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
