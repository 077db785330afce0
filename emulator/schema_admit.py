"""What kube-apiserver does with a custom resource body before it is stored, in its order:
prune undeclared fields, apply defaults, validate against the served version's schema
(ratcheting unchanged invalid values on update), and answer ``fieldValidation`` for the fields
pruning dropped. The store calls ``admit`` for every write of a custom resource, whoever makes
it; the REST layer calls ``field_validation`` where the request's query is known.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.fieldvalidation import duplicate_fields, mode, outcome
from kubetrio.emulator.jsoncopy import json_copy
from kubetrio.emulator.schema_cel import MISSING, check_rules, has_rules
from kubetrio.emulator.schema_prune import default, prune
from kubetrio.emulator.schema_validate import (
    Cause,
    Schema,
    Token,
    embedded_resources,
    list_sets_and_maps,
    validate,
)

_MISSING = MISSING
# Errors after which kube does not run CEL rules, saying so in a cause of its own.
_BLOCKING = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
_RULES_SKIPPED = Cause(
    "FieldValueInvalid",
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)
_NAME_FIELDS = ("name", "generateName")


def crd_schema(crd: dict[str, Any] | None, api_version: str | None) -> Schema | None:
    """The ``openAPIV3Schema`` of the version ``api_version`` names (the storage version when
    it names none the CRD serves)."""
    if crd is None:
        return None
    versions = (crd.get("spec") or {}).get("versions") or []
    want = (api_version or "").rpartition("/")[2]
    chosen = next((v for v in versions if v.get("name") == want), None)
    if chosen is None:
        chosen = next((v for v in versions if v.get("storage")), None)
    schema = ((chosen or {}).get("schema") or {}).get("openAPIV3Schema")
    return schema if isinstance(schema, dict) else None


def admit(
    crd: dict[str, Any] | None,
    group: str,
    kind: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
) -> None:
    """Prune and default ``obj`` in place, then 422 with one cause per schema violation.

    On update a violation whose value is unchanged from ``old`` is let through (kube's
    validation ratcheting), so tightening a schema never wedges status writes of objects
    stored before."""
    schema = crd_schema(crd, obj.get("apiVersion"))
    if schema is None:
        return
    prune(schema, obj)
    default(schema, obj)
    # With the old object, subtrees ratcheting would wholly forgive are not walked (same causes).
    causes = validate(schema, _validation_view(obj), old=old)
    causes += embedded_resources(schema, obj) + list_sets_and_maps(schema, obj)
    if old is not None:
        causes = [c for c in causes if not _unchanged(c.path, obj, old)]
    if has_rules(schema):
        if any(c.reason in _BLOCKING for c in causes):
            causes.append(_RULES_SKIPPED)
        else:
            causes.extend(check_rules(schema, obj, _MISSING if old is None else old))
    if causes:
        name = str((obj.get("metadata") or {}).get("name", ""))
        raise errors.invalid(group, kind, name, [c.triple() for c in _dedup(causes)])


def default_stored(crd: dict[str, Any] | None, obj: dict[str, Any]) -> dict[str, Any] | None:
    """``obj`` as a read from storage returns it under the current schema (pruned and
    defaulted), or None when that changes nothing."""
    schema = crd_schema(crd, obj.get("apiVersion"))
    if schema is None:
        return None
    out = copy.deepcopy(obj)
    prune(schema, out)
    default(schema, out)
    return None if out == obj else out


def field_validation(
    crd: dict[str, Any] | None,
    obj: dict[str, Any],
    directive: str | None,
    body: bytes | None = None,
) -> list[tuple[str, str]]:
    """Unknown fields (and keys repeated in the JSON ``body``) of a custom resource write,
    answered as the ``fieldValidation`` directive says; the object itself is left as sent."""
    how = mode({"fieldValidation": directive or ""})
    if how == "Ignore":
        return []
    schema = crd_schema(crd, obj.get("apiVersion"))
    if schema is None:
        return []
    # prune works in place: on a private copy.
    problems = [f'unknown field "{f}"' for f in sorted(prune(schema, json_copy(obj)))]
    if body:
        problems += [f'duplicate field "{p}"' for p in duplicate_fields(body, obj)]
    return outcome(how, problems)


def _validation_view(obj: dict[str, Any]) -> dict[str, Any]:
    """ObjectMeta is validated by its own rules; a schema may only constrain the name."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return obj
    view = dict(obj)
    view["metadata"] = {k: md[k] for k in _NAME_FIELDS if k in md}
    return view


def _lookup(obj: Any, path: tuple[Token, ...]) -> Any:
    for t in path:
        if isinstance(t, int):
            if not isinstance(obj, list) or t >= len(obj):
                return _MISSING
            obj = obj[t]
        else:
            if not isinstance(obj, dict) or t not in obj:
                return _MISSING
            obj = obj[t]
    return obj


def _unchanged(path: tuple[Token, ...], new: dict[str, Any], old: dict[str, Any]) -> bool:
    a, b = _lookup(new, path), _lookup(old, path)
    return a is not _MISSING and b is not _MISSING and a == b


def _dedup(causes: list[Cause]) -> list[Cause]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for c in causes:
        if c.triple() not in seen:
            seen.add(c.triple())
            out.append(c)
    return out
