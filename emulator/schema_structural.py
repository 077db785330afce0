"""Whether a CRD's ``openAPIV3Schema`` is one apiextensions-apiserver serves: structural (every
field typed outside value validations, metadata left to ObjectMeta) with defaults that pass the
schema they sit in. A CRD that fails is rejected with one cause per offending schema node, so
the author sees exactly what kube-apiserver would tell them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubetrio.emulator.schema_cel import compile_error
from kubetrio.emulator.schema_prune import prune
from kubetrio.emulator.schema_validate import (
    Cause,
    Schema,
    compile_pattern,
    go_value,
    pattern_error,
    validate,
)

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_EMPTY_TYPE = {
    _ROOT: "must not be empty at the root",
    _ITEM: "must not be empty for specified array items",
    _FIELD: "must not be empty for specified object fields",
}
_JUNCTORS = ("allOf", "anyOf", "oneOf")
# What a value validation (inside allOf/anyOf/oneOf/not) may not say, and how kube words it.
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def check_crd(crd: dict[str, Any]) -> list[Cause]:
    """Every reason the CRD's version schemas cannot be served, sorted as kube sorts them."""
    spec = crd.get("spec")
    versions = spec.get("versions") if isinstance(spec, dict) else None
    out: list[Cause] = []
    if isinstance(spec, dict) and spec.get("preserveUnknownFields") is True:
        out.append(
            _invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    for i, v in enumerate(versions if isinstance(versions, list) else []):
        schema = ((v or {}).get("schema") or {}) if isinstance(v, dict) else {}
        root = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
        at = f"spec.versions[{i}].schema.openAPIV3Schema"
        if root is None:
            # apiextensions.k8s.io/v1 serves nothing unstructured.
            out.append(_required(at, "schemas are required"))
            continue
        if not isinstance(root, dict):
            out.append(_c("FieldValueInvalid", at, "Invalid value: must be an object"))
            continue
        found: list[Cause] = []
        _structural(root, _ROOT, at, found)
        _complete(root, root, at, at, found)
        found.sort(key=lambda c: f"{c.field}: {c.message}")
        if not found:
            _defaults(root, at, found, in_meta=False)
        out.extend(found)
    return out


def _c(reason: str, field: str, message: str) -> Cause:
    return Cause(reason, field, message)


def _required(field: str, detail: str) -> Cause:
    return _c(
        "FieldValueRequired", field, f"Required value: {detail}" if detail else "Required value"
    )


def _forbidden(field: str, detail: str) -> Cause:
    return _c("FieldValueForbidden", field, f"Forbidden: {detail}")


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return _c("FieldValueInvalid", field, f"Invalid value: {go_value(value)}: {detail}")


def _structural(s: Any, level: str, at: str, out: list[Cause]) -> None:
    if not isinstance(s, dict):
        out.append(_invalid(at, str(type(s).__name__), "must be a schema object"))
        return
    typ = s.get("type", "")
    if typ not in ("", "object", "array", "string", "integer", "number", "boolean"):
        out.append(
            _c(
                "FieldValueNotSupported",
                f"{at}.type",
                f'Unsupported value: {json.dumps(typ)}: supported values: "array", "boolean", '
                '"integer", "number", "object", "string"',
            )
        )
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    if typ == "array" and not isinstance(s.get("items"), dict):
        out.append(_required(f"{at}.items", "must be specified"))
    if isinstance(s.get("items"), dict):
        _structural(s["items"], _ITEM, f"{at}.items", out)
    props = s.get("properties") or {}
    for k, ps in props.items():
        _structural(ps, _FIELD, f"{at}.properties[{k}]", out)
    extra = s.get("additionalProperties")
    if extra is not None:
        if level == _ROOT:
            out.append(_forbidden(f"{at}.additionalProperties", "must not be used at the root"))
        if props:
            out.append(
                _forbidden(
                    f"{at}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        if isinstance(extra, dict):
            _structural(extra, _FIELD, f"{at}.additionalProperties", out)
    if int_or_string and preserve:
        out.append(
            _invalid(
                f"{at}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        out.append(
            _invalid(
                f"{at}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    skip_any_of = s.get("anyOf") == _INT_OR_STRING
    all_of = s.get("allOf") or []
    skip_first = (
        bool(all_of) and isinstance(all_of[0], dict) and all_of[0].get("anyOf") == (_INT_OR_STRING)
    )
    _value_validation(s, at, out, skip_any_of, skip_first)
    if embedded and typ != "object":
        if not typ:
            out.append(
                _required(f"{at}.type", "must be object if x-kubernetes-embedded-resource is true")
            )
        else:
            out.append(
                _invalid(
                    f"{at}.type", typ, "must be object if x-kubernetes-embedded-resource is true"
                )
            )
    elif not typ and not int_or_string and not preserve:
        out.append(_required(f"{at}.type", _EMPTY_TYPE[level]))
    if embedded and extra is not None:
        out.append(
            _forbidden(
                f"{at}.additionalProperties",
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == _ROOT and typ and typ != "object":
        out.append(_invalid(f"{at}.type", typ, "must be object at the root"))
    check_meta = level == _ROOT or embedded
    for key in ("kind", "apiVersion"):
        sub = props.get(key)
        if check_meta and isinstance(sub, dict) and sub.get("type") != "string":
            out.append(
                _invalid(f"{at}.properties[{key}].type", sub.get("type", ""), "must be string")
            )
    meta = props.get("metadata")
    if isinstance(meta, dict):
        _metadata(meta, check_meta, level, f"{at}.properties[metadata]", out)
    if embedded and not preserve and not props:
        out.append(
            _required(
                f"{at}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    _rules(s, at, out)
    if s.get("uniqueItems") is True:
        out.append(
            _forbidden(
                f"{at}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    if s.get("x-kubernetes-list-type") == "map" and not s.get("x-kubernetes-list-map-keys"):
        out.append(
            _required(
                f"{at}.x-kubernetes-list-map-keys",
                "must not be empty if x-kubernetes-list-type is map",
            )
        )


def _rules(s: Schema, at: str, out: list[Cause]) -> None:
    """x-kubernetes-validations rules must be there and compile."""
    rules = s.get("x-kubernetes-validations")
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        where = f"{at}.x-kubernetes-validations[{i}].rule"
        text = rule.get("rule") if isinstance(rule, dict) else None
        if not isinstance(text, str) or not text.strip():
            out.append(_required(where, ""))
            continue
        why = compile_error(text)
        if why is not None:
            out.append(_invalid(where, rule, f"compilation failed: {why}"))


def _complete(v: Schema, s: Any, s_at: str, v_at: str, out: list[Cause]) -> None:
    """Every field a value validation names at the root's junctors must also be specified
    structurally (kube checks this from the root's allOf/anyOf/oneOf/not only)."""
    for junctor in _JUNCTORS:
        for i, sub in enumerate(v.get(junctor) or []):
            _complete_nested(sub, s, s_at, f"{v_at}.{junctor}[{i}]", out)
    if isinstance(v.get("not"), dict):
        _complete_nested(v["not"], s, s_at, f"{v_at}.not", out)


def _complete_nested(v: Any, s: Any, s_at: str, v_at: str, out: list[Cause]) -> None:
    if not isinstance(v, dict):
        return
    if not isinstance(s, dict):
        out.append(_required(s_at, f"because it is defined in {v_at}"))
        return
    _complete(v, s, s_at, v_at, out)
    if isinstance(v.get("items"), dict):
        _complete_nested(v["items"], s.get("items"), f"{s_at}.items", f"{v_at}.items", out)
    props = s.get("properties") or {}
    for k, sub in (v.get("properties") or {}).items():
        where = f"{v_at}.properties[{k}]"
        if k not in props:
            out.append(_required(f"{s_at}.properties[{k}]", f"because it is defined in {where}"))
        else:
            _complete_nested(sub, props[k], f"{s_at}.properties[{k}]", where, out)


def _metadata(meta: Schema, check: bool, level: str, at: str, out: list[Cause]) -> None:
    """metadata is ObjectMeta: at the root a schema may only constrain name and
    generateName."""
    if check and meta.get("type") != "object":
        out.append(_invalid(f"{at}.type", meta.get("type", ""), "must be object"))
    if level != _ROOT:
        return
    rest = {k: v for k, v in meta.items() if k not in ("type", "default", "description")}
    props = rest.pop("properties", None) or {}
    if set(props) - {"name", "generateName"} or rest:
        out.append(
            _forbidden(
                at,
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )
        )


def _value_validation(
    s: Schema, at: str, out: list[Cause], skip_any_of: bool, skip_first_all_of: bool
) -> None:
    for junctor in _JUNCTORS:
        for i, sub in enumerate(s.get(junctor) or []):
            skip = junctor == "anyOf" and skip_any_of
            skip_nested = junctor == "allOf" and i == 0 and skip_first_all_of
            if not skip:
                _nested(sub, f"{at}.{junctor}[{i}]", out, skip_nested)
    if isinstance(s.get("not"), dict):
        _nested(s["not"], f"{at}.not", out, False)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern and compile_pattern(pattern) is None:
        out.append(
            _invalid(
                f"{at}.pattern",
                pattern,
                f"must be a valid regular expression, but isn't: error parsing regexp: "
                f"{pattern_error(pattern)}",
            )
        )


def _nested(v: Any, at: str, out: list[Cause], skip_any_of: bool) -> None:
    if not isinstance(v, dict):
        return
    _value_validation(v, at, out, skip_any_of, False)
    if isinstance(v.get("items"), dict):
        _nested(v["items"], f"{at}.items", out, False)
    for k, sub in (v.get("properties") or {}).items():
        _nested(sub, f"{at}.properties[{k}]", out, False)
    for key, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        if value not in (None, False, "", [], {}):
            out.append(_forbidden(f"{at}.{key}", detail))
    if "metadata" in (v.get("properties") or {}):
        out.append(
            _forbidden(f"{at}.properties[metadata]", "must not be specified in a nested context")
        )


def _defaults(s: Schema, at: str, out: list[Cause], in_meta: bool) -> None:
    """Each default must survive pruning unchanged and pass its own schema."""
    if "default" in s and not in_meta:
        value = s["default"]
        if isinstance(value, dict):
            pruned = copy.deepcopy(value)
            if prune(s, pruned, root=embedded_default(s)):
                out.append(_invalid(f"{at}.default", value, "must not have unknown fields"))
                return
        for c in validate(s, value):
            field = f"{at}.default" + (f".{c.field}" if c.field else "")
            out.append(_c(c.reason, field, c.message))
    if isinstance(s.get("items"), dict):
        _defaults(s["items"], f"{at}.items", out, in_meta)
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    for k, sub in (s.get("properties") or {}).items():
        if isinstance(sub, dict):
            meta = in_meta or (embedded and k in ("metadata", "apiVersion", "kind"))
            _defaults(sub, f"{at}.properties[{k}]", out, meta)


def embedded_default(s: Schema) -> bool:
    """An embedded resource's default keeps its TypeMeta and ObjectMeta when pruned."""
    return bool(s.get("x-kubernetes-embedded-resource"))
