"""Server-side field validation of built-in kinds (the ``fieldValidation`` query parameter).

The real apiserver decodes a built-in object into its Go type, so fields the type lacks are
dropped, and a key given twice keeps the last value; ``fieldValidation`` only decides whether
that is silent (Ignore), reported in ``Warning`` headers (Warn, the default) or fatal (Strict).
Unknown fields are found against the published schemas, so what ``kubectl explain`` shows and
what the server accepts never disagree. Custom resources are pruned elsewhere (their schemas
live in CRDs).
"""

from __future__ import annotations

from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.fieldvalidation import duplicate_fields, mode, outcome
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.openapi_schemas import builtin_definitions, builtin_name


class _Walk:
    """One pass over an object against its schema: drops undeclared fields (remembering their
    paths) and records the first value Go's JSON decoder would refuse for its type."""

    def __init__(self) -> None:
        self.defs = builtin_definitions()
        self.unknown: list[str] = []
        self.type_error: str | None = None

    def node(self, schema: dict[str, Any], value: Any, path: str, struct: str, go: str) -> None:
        """``path`` names the field for messages about unknown fields (with list indexes);
        ``struct`` and ``go`` are what Go's decoder names: the innermost struct type and the
        field path without indexes or map keys."""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/definitions/")
            target = self.defs.get(name, {})
            if "properties" not in target and target.get("type") != "object":
                return  # custom JSON form (Time, Quantity, IntOrString, JSON): not checked
            if "properties" in target:
                if value is not None and not isinstance(value, dict):
                    self._mismatch(value, struct, go, _go_type(schema))
                    return
                struct = name.rpartition(".")[2]
            schema = target
        if value is None:
            return  # null decodes into anything
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, dict):
            if not isinstance(value, dict):
                self._mismatch(value, struct, go, _go_type(schema))
                return
            for key in list(value):
                sub = f"{path}.{key}" if path else key
                gosub = f"{go}.{key}" if go else key
                if key in props:
                    self.node(props[key], value[key], sub, struct, gosub)
                else:
                    self.unknown.append(sub)
                    del value[key]
            return
        kind = schema.get("type")
        if kind == "object" and isinstance(extra, dict):
            if not isinstance(value, dict):
                self._mismatch(value, struct, go, _go_type(schema))
                return
            for key, item in value.items():
                self.node(extra, item, f"{path}.{key}" if path else key, struct, go)
        elif kind == "array":
            if not isinstance(value, list):
                self._mismatch(value, struct, go, _go_type(schema))
                return
            items = schema.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(value):
                    self.node(items, item, f"{path}[{i}]", struct, go)
        elif kind in _SCALARS and not _fits(kind, value):
            self._mismatch(value, struct, go, _go_type(schema), integer=kind == "integer")
        # Anything else is a free-form object (RawExtension, FieldsV1): it keeps what it holds.

    def _mismatch(
        self, value: Any, struct: str, go: str, type_: str, integer: bool = False
    ) -> None:
        if self.type_error is None:
            self.type_error = (
                f"json: cannot unmarshal {_json_kind(value, integer)} into Go struct field "
                f"{struct}.{go} of type {type_}"
            )


_SCALARS = ("string", "integer", "number", "boolean")


def _fits(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_kind(value: Any, integer: bool) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        # Go quotes the number only when it is a fraction given for an integer.
        return f"number {value!r}" if integer and isinstance(value, float) else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _go_type(schema: dict[str, Any]) -> str:
    """The Go type the apiserver decodes a schema into, as its errors print it."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        parts = ref.split(".")
        return f"{parts[-2]}.{parts[-1]}"
    kind = schema.get("type")
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object":
        return "map[string]" + _go_type(schema.get("additionalProperties") or {})
    if kind == "integer":
        return str(schema.get("format") or "int64")
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "string" and schema.get("format") == "byte":
        return "[]uint8"
    return "string"


def prune_unknown(schema_name: str, obj: Any) -> list[str]:
    """Remove from ``obj`` (in place) every field its schema does not declare; returns their
    paths."""
    walk = _Walk()
    walk.node({"$ref": "#/definitions/" + schema_name}, obj, "", "", "")
    return walk.unknown


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
    dups = duplicate_fields(body, obj) if body and directive != "Ignore" else []
    walk = _Walk()
    try:
        walk.node({"$ref": "#/definitions/" + name}, obj, "", "", "")
    except RecursionError:
        raise errors.bad_request("the request body is nested too deeply") from None
    unknown = walk.unknown
    av = f"{rt.group}/{version}" if rt.group else version
    if walk.type_error is not None:
        # Decoding fails whatever the directive, as it does in the apiserver.
        if operation in ("create", "update"):
            raise errors.bad_request(
                f'{rt.kind} in version "{av}" cannot be handled as a {rt.kind}: {walk.type_error}'
            )
        raise errors.bad_request(walk.type_error)
    if operation == "apply" and unknown:
        gv = f"{rt.group}/{version}" if rt.group else f"/{version}"
        raise errors.bad_request(
            f"failed to create typed patch object ({gv}, Kind={rt.kind}): "
            f".{unknown[0]}: field not declared in schema"
        )
    problems = [f'unknown field "{p}"' for p in unknown]
    problems += [f'duplicate field "{p}"' for p in dups]
    prefix = ""
    if operation in ("create", "update"):
        prefix = f'{rt.kind} in version "{av}" cannot be handled as a {rt.kind}: '
    return outcome(directive, problems, prefix)
