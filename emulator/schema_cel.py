"""``x-kubernetes-validations``: CEL rules of a CRD schema, evaluated with cel-python.

kube-apiserver binds ``self`` to the value at the schema node that carries the rule (and
``oldSelf`` to the previous value on update, for transition rules) and reports a rule that does
not hold as one field error at that node: ``message`` (or ``failed rule: <rule>``), with the
rule's ``reason`` and ``fieldPath``. Rules that cannot compile are refused when the CRD is
written. kube's type-checked compile, its cost budgets and its library extensions beyond
standard CEL (quantity, url, ip, cidr, format) are not reproduced.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from kubetrio.emulator.schema_validate import Cause, Schema, Token, path_text

MISSING = object()  # no old value (create, or a path the old object did not have)
_MISSING = MISSING
_TYPE_NAME = {
    "object": "object",
    "array": "array",
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}


@lru_cache(maxsize=1)
def _env() -> celpy.Environment:
    return celpy.Environment()


@lru_cache(maxsize=1024)
def _program(rule: str) -> celpy.Runner:
    env = _env()
    return env.program(env.compile(rule))


def compile_error(rule: str) -> str | None:
    """Why ``rule`` does not compile (None when it does)."""
    try:
        _program(rule)
    except CELParseError as exc:
        return " ".join(str(exc).split())
    return None


# Stored CRDs are never mutated, so a schema object's answer holds while it is alive; the
# entry keeps the schema itself so that a recycled id() is never mistaken for it.
_HAS_RULES: dict[int, tuple[Schema, bool]] = {}


def has_rules(schema: Schema) -> bool:
    """Whether any node of the schema carries x-kubernetes-validations."""
    hit = _HAS_RULES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    answer = _any_rules(schema)
    if len(_HAS_RULES) >= 256:
        _HAS_RULES.clear()
    _HAS_RULES[id(schema)] = (schema, answer)
    return answer


def _any_rules(s: Any) -> bool:
    if isinstance(s, dict):
        if s.get("x-kubernetes-validations"):
            return True
        return any(_any_rules(v) for v in s.values() if isinstance(v, (dict, list)))
    if isinstance(s, list):
        return any(_any_rules(v) for v in s)
    return False


def check_rules(schema: Schema, value: Any, old: Any = _MISSING) -> list[Cause]:
    """Every rule under ``schema`` that does not hold for ``value``."""
    out: list[Cause] = []
    _walk(schema, value, old, (), out)
    return out


def _walk(s: Schema, v: Any, old: Any, path: tuple[Token, ...], out: list[Cause]) -> None:
    """The node's own rules, then its children's, in kube's order."""
    if v is None:
        return
    for rule in s.get("x-kubernetes-validations") or []:
        if isinstance(rule, dict) and isinstance(rule.get("rule"), str):
            cause = _evaluate(s, rule, v, old, path)
            if cause is not None:
                out.append(cause)
    if isinstance(v, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for k, sub in v.items():
            child = props.get(k) or (extra if isinstance(extra, dict) else None)
            if child is not None:
                was = old.get(k, _MISSING) if isinstance(old, dict) else _MISSING
                _walk(child, sub, was, (*path, k), out)
    elif isinstance(v, list) and isinstance(s.get("items"), dict):
        for i, item in enumerate(v):
            _walk(s["items"], item, _MISSING, (*path, i), out)


def _evaluate(
    s: Schema, rule: dict[str, Any], v: Any, old: Any, path: tuple[Token, ...]
) -> Cause | None:
    text: str = rule["rule"]
    transition = "oldSelf" in text
    if transition and old is _MISSING:
        return None  # a transition rule only speaks when there is an old value to compare
    activation = {"self": json_to_cel(v)}
    if transition:
        activation["oldSelf"] = json_to_cel(old)
    at = path_text(path)
    field = at + _field_path(rule.get("fieldPath"), at)
    shown = json.dumps(_TYPE_NAME.get(str(s.get("type")), "object"))
    try:
        result = _program(text).evaluate(activation)
    except (CELEvalError, CELParseError, TypeError, ValueError) as exc:
        reason = exc.args[0] if exc.args else exc
        return Cause(
            "FieldValueInvalid",
            field,
            f"Invalid value: {shown}: {reason} evaluating rule: {text}",
            path,
        )
    if isinstance(result, (bool, celtypes.BoolType)) and bool(result):
        return None
    message = rule.get("message") or f"failed rule: {text}"
    expr = rule.get("messageExpression")
    if isinstance(expr, str) and expr:
        try:
            produced = _program(expr).evaluate(activation)
        except (CELEvalError, CELParseError, TypeError, ValueError):
            produced = None
        if isinstance(produced, str) and produced.strip():
            message = str(produced)
    kind = rule.get("reason") or "FieldValueInvalid"
    body = {
        "FieldValueForbidden": f"Forbidden: {message}",
        "FieldValueRequired": f"Required value: {message}",
        "FieldValueDuplicate": f"Duplicate value: {shown}: {message}",
    }.get(kind, f"Invalid value: {shown}: {message}")
    return Cause(kind if kind in _REASONS else "FieldValueInvalid", field, body, path)


_REASONS = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)


def _field_path(relative: Any, at: str) -> str:
    """A rule's ``fieldPath`` (``.spec.x``) appended to the node's own path."""
    if not isinstance(relative, str) or not relative:
        return ""
    return relative if at else relative.lstrip(".")
