"""Server-side field validation of built-in kinds (the ``fieldValidation`` query parameter).

The real apiserver decodes a built-in object into its Go type, so fields the type lacks are
dropped, and a key given twice keeps the last value; ``fieldValidation`` only decides whether
that is silent (Ignore), reported in ``Warning`` headers (Warn, the default) or fatal (Strict).
Unknown fields are found against the published schemas, so what ``kubectl explain`` shows and
what the server accepts never disagree. Custom resources are pruned elsewhere (their schemas
live in CRDs).
"""

from __future__ import annotations

import json
from typing import Any

from kubetrio.runtime.emulator import errors
from kubetrio.runtime.emulator.kinds import ResourceType
from kubetrio.runtime.emulator.openapi_schemas import builtin_definitions, builtin_name

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
    except ValueError:
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


def prune_unknown(schema_name: str, obj: Any) -> list[str]:
    """Remove from ``obj`` (in place) every field its schema does not declare; returns their
    paths in document order."""
    defs = builtin_definitions()
    out: list[str] = []
    _walk(defs, defs.get(schema_name, {}), obj, "", out)
    return out


def _resolve(defs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 32:
        schema = defs.get(schema["$ref"].removeprefix("#/definitions/"), {})
        seen += 1
    return schema


def _walk(
    defs: dict[str, Any], schema: dict[str, Any], value: Any, path: str, out: list[str]
) -> None:
    schema = _resolve(defs, schema)
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, dict):
            for key in list(value):
                sub = f"{path}.{key}" if path else key
                if key in props:
                    _walk(defs, props[key], value[key], sub, out)
                else:
                    out.append(sub)
                    del value[key]
        elif isinstance(extra, dict):
            for key, item in value.items():
                _walk(defs, extra, item, f"{path}.{key}" if path else key, out)
        # Neither: a free-form object (RawExtension, FieldsV1, JSON) keeps whatever it holds.
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(defs, schema["items"], item, f"{path}[{i}]", out)


def check(
    rt: ResourceType,
    version: str,
    obj: dict[str, Any],
    query: dict[str, str],
    body: bytes | None,
    operation: str,
) -> list[tuple[str, str]]:
    """Validate and prune one built-in write; returns the Warning headers to send.

    ``operation`` is create, update, patch or apply: the apiserver words a strict failure
    differently for each. ``body`` is the raw JSON request body, checked for repeated keys
    (None for YAML apply bodies).
    """
    if not rt.builtin:
        return []
    name = builtin_name(rt.group, version, rt.kind)
    if name is None:
        return []
    directive = mode(query)
    dups = duplicate_fields(body) if body and directive != "Ignore" else []
    unknown = prune_unknown(name, obj)
    if operation == "apply" and unknown:
        gv = f"{rt.group}/{version}" if rt.group else f"/{version}"
        raise errors.bad_request(
            f"failed to create typed patch object ({gv}, Kind={rt.kind}): "
            f".{unknown[0]}: field not declared in schema"
        )
    problems = [f'unknown field "{p}"' for p in unknown]
    problems += [f'duplicate field "{p}"' for p in dups]
    if directive == "Ignore" or not problems:
        return []
    if directive == "Strict":
        detail = "strict decoding error: " + ", ".join(problems)
        if operation in ("create", "update"):
            av = f"{rt.group}/{version}" if rt.group else version
            detail = f'{rt.kind} in version "{av}" cannot be handled as a {rt.kind}: {detail}'
        raise errors.bad_request(detail)
    return [("Warning", "299 - " + json.dumps(p)) for p in problems]
