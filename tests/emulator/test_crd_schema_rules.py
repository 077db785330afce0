"""The pure parts of custom resource schema handling: value rendering, pruning, defaulting,
structural checks and validation of whatever shapes hypothesis can think of."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrio.emulator.schema_admit import admit, field_validation
from kubetrio.emulator.schema_prune import default, prune
from kubetrio.emulator.schema_structural import check_crd
from kubetrio.emulator.schema_validate import go_number, go_value, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "default": 1},
                "s": {"type": "string", "maxLength": 3},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "l": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
                "keep": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "opt": {"type": "string", "nullable": True, "default": "d"},
            },
        }
    },
}


def crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": {
            "versions": [{"name": "v1", "storage": True, "schema": {"openAPIV3Schema": schema}}]
        }
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, "3"),
        (3.0, "3"),
        (1.5, "1.5"),
        (1e21, "1e+21"),
        (True, "true"),
        ('a"b', '"a\\"b"'),
        ({"b": 1, "a": [None]}, '{"a":[null],"b":1}'),
    ],
)
def test_values_print_as_go_prints_them(value: Any, text: str) -> None:
    assert go_value(value) == text


def test_go_number_keeps_fractions() -> None:
    assert go_number(0.25) == "0.25"
    assert go_number(-7) == "-7"


def test_prune_reports_paths_and_keeps_type_and_object_meta() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "a", "whatever": 1},
        "spec": {"n": 1, "zz": 2, "l": [{"a": "x", "b": 1}], "keep": {"any": {"thing": 1}}},
        "other": True,
    }
    dropped = prune(SCHEMA, obj)
    assert sorted(dropped) == ["metadata.whatever", "other", "spec.l[0].b", "spec.zz"]
    assert obj["metadata"] == {"name": "a"}  # ObjectMeta's own fields only
    assert obj["spec"] == {"n": 1, "l": [{"a": "x"}], "keep": {"any": {"thing": 1}}}


def test_defaults_fill_absent_fields_and_respect_nullable() -> None:
    obj: dict[str, Any] = {"spec": {"opt": None, "s": None}}
    default(SCHEMA, obj)
    # n absent: defaulted; opt null but nullable: kept; s null, not nullable, no default: gone.
    assert obj["spec"] == {"n": 1, "opt": None}
    nested: dict[str, Any] = {}
    default(SCHEMA, nested)
    assert nested == {}  # no parent object, nothing to default into


def test_admit_ratchets_only_unchanged_values() -> None:
    c = crd(SCHEMA)
    old = {"apiVersion": "x/v1", "metadata": {"name": "a"}, "spec": {"n": 1, "s": "toolong"}}
    new = {"apiVersion": "x/v1", "metadata": {"name": "a"}, "spec": {"n": 2, "s": "toolong"}}
    admit(c, "x", "X", new, old)  # s unchanged: let through
    changed = {"apiVersion": "x/v1", "metadata": {"name": "a"}, "spec": {"s": "longer"}}
    with pytest.raises(Exception) as err:
        admit(c, "x", "X", changed, old)
    assert "spec.s: Too long: may not be more than 3 bytes" in str(err.value)


def test_field_validation_directives() -> None:
    c = crd(SCHEMA)
    obj = {"apiVersion": "x/v1", "spec": {"b": 1, "a": 2}}
    assert field_validation(c, obj, "Ignore") == []
    assert field_validation(c, obj, None) == [
        ("Warning", '299 - "unknown field \\"spec.a\\""'),
        ("Warning", '299 - "unknown field \\"spec.b\\""'),
    ]
    assert obj["spec"] == {"b": 1, "a": 2}  # the check never changes the body


def test_structural_schema_for_the_machine_crds_is_clean() -> None:
    from kubetrio.cmd.assets import crd_documents

    docs = crd_documents()
    assert len(docs) == 4
    for doc in docs:
        assert check_crd(doc) == []


def test_int_or_string_patterns_are_structural() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            }
        },
    }
    assert check_crd(crd(schema)) == []
    assert validate(schema, {"p": 3}) == []
    assert validate(schema, {"p": "3"}) == []
    # As kube: the type error, anyOf's composite error and the closest alternative's error.
    assert [c.message for c in validate(schema, {"p": True})] == [
        'Invalid value: "boolean": p in body must be of type integer,string: "boolean"',
        'Invalid value: "": "p" must validate at least one schema (anyOf)',
        'Invalid value: "boolean": p in body must be of type integer: "boolean"',
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["n", "s", "m", "l", "a", "keep", "opt", "x"]), inner, max_size=4
        )
    ),
    max_leaves=10,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, database=None)
@given(spec=json_values)
def test_admitted_objects_always_validate(spec: Any) -> None:
    """Whatever admit lets through is pruned, defaulted and valid; nothing raises but 422."""
    c = crd(SCHEMA)
    obj: dict[str, Any] = {"apiVersion": "x/v1", "metadata": {"name": "a"}, "spec": spec}
    try:
        admit(c, "x", "X", obj)
    except Exception as exc:  # the only acceptable failure is a 422
        assert getattr(exc, "code", None) == 422, exc
        return
    assert validate(SCHEMA, obj) == []
    assert prune(SCHEMA, obj) == []
