"""The CRD generator and ``@resource``: every type mapping, multi-version kinds, bad input, and
a property — whatever a typed view encodes, the generated schema accepts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrio.api import (
    Condition,
    KubeObject,
    Model,
    PreserveUnknownFields,
    PrinterColumn,
    Scale,
    register,
    resource,
)
from kubetrio.api.declare import plural_of
from kubetrio.api.markers import Atomic, DateTime, Int32, Quantity, SchemaOf
from kubetrio.api.meta import UndeclaredKind, kind_of
from kubetrio.api.registry import KindConflict, KindInfo, lookup
from kubetrio.emulator.schema_structural import check_crd
from kubetrio.emulator.schema_validate import list_sets_and_maps, validate
from kubetrio.runtime.gen.crd import CrdError, crd_for, schema_for


class Inner(Model, kw_only=True):
    """A nested part."""

    key: Annotated[str, msgspec.Meta(pattern="^[a-z]+$", max_length=8)]
    weight: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.5


class SampleSpec(Model, kw_only=True):
    """Everything the generator maps."""

    size: Annotated[int, msgspec.Meta(ge=1, le=5, title="Size")] = 3
    mode: Literal["a", "b"] = "a"
    maybe: int | None = None
    port: int | str = 80
    at: datetime | None = None
    labels: dict[str, str] = {}
    free: dict[str, Any] = {}
    anything: Any = None
    kept: Annotated[dict[str, Any], PreserveUnknownFields] = {}
    tags: frozenset[str] = frozenset()
    items: Annotated[tuple[Inner, ...], msgspec.Meta(min_length=0, max_length=4)] = ()
    provider_id: str = msgspec.field(default="", name="providerID")
    flag: bool = True


class SampleStatus(Model, kw_only=True):
    conditions: tuple[Condition, ...] = ()


@resource(
    group="unit.kubetrio.dev",
    version="v1",
    namespaced=False,
    categories=("unit",),
    status=True,
    scale=Scale(".spec.size", ".status.size", ".status.selector"),
    printer_columns=(PrinterColumn("Size", ".spec.size", type="integer", priority=1),),
)
class Sample(KubeObject, kw_only=True):
    """A sample kind."""

    spec: SampleSpec = msgspec.field(default_factory=SampleSpec)
    status: SampleStatus = msgspec.field(default_factory=SampleStatus)


@resource(group="unit.kubetrio.dev", version="v1", kind="Box", storage=True)
class BoxV1(KubeObject, kw_only=True):
    size: int = 0


@resource(group="unit.kubetrio.dev", version="v2", kind="Box", storage=False)
class BoxV2(KubeObject, kw_only=True):
    size: int = 0
    colour: str = ""


@resource(group="unit.kubetrio.dev", version="v3", kind="Box", storage=True)
class BoxV3(KubeObject, kw_only=True):
    size: int = 0


def spec_schema() -> dict[str, Any]:
    props: dict[str, Any] = schema_for(Sample)["properties"]["spec"]["properties"]
    return props


def test_plural_rules() -> None:
    assert [plural_of(k) for k in ("Greeting", "Box", "Bus", "Match", "Mesh", "Policy", "Day")] == [
        "greetings",
        "boxes",
        "buses",
        "matches",
        "meshes",
        "policies",
        "days",
    ]


def test_resource_declares_and_registers() -> None:
    info = Sample.KIND
    assert (info.api_version, info.kind, info.plural, info.singular) == (
        "unit.kubetrio.dev/v1",
        "Sample",
        "samples",
        "sample",
    )
    assert info.subresources == ("status", "scale")
    assert lookup("unit.kubetrio.dev/v1", "Sample") is info
    assert register(KindInfo(**{f: getattr(info, f) for f in info.__slots__})) == info


def test_conflicting_registration_names_both() -> None:
    other = KindInfo("unit.kubetrio.dev/v1", "Sample", "samplez", False)
    with pytest.raises(KindConflict, match=r"'Sample' in apiVersion 'unit\.kubetrio\.dev/v1'"):
        register(other)


def test_undeclared_kind_names_the_fix() -> None:
    class Plain(KubeObject, kw_only=True):
        pass

    fix = r"Plain is not a declared kind: decorate it with @kubetrio\.api\.resource\("
    with pytest.raises(UndeclaredKind, match=fix):
        _ = Plain.KIND
    with pytest.raises(UndeclaredKind, match="SampleSpec is not a declared kind"):
        kind_of(SampleSpec)
    with pytest.raises(UndeclaredKind):
        crd_for(Plain)
    with pytest.raises(KeyError, match=r"declare its class with @kubetrio\.api\.resource"):
        lookup("unit.kubetrio.dev/v1", "Nope")


def test_scalars_bounds_enum_defaults() -> None:
    props = spec_schema()
    assert props["size"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
        "title": "Size",
        "default": 3,
    }
    assert props["mode"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert props["flag"] == {"type": "boolean", "default": True}
    inner = props["items"]["items"]
    assert inner["description"] == "A nested part."
    assert inner["required"] == ["key"]
    assert inner["properties"]["key"] == {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"}
    assert inner["properties"]["weight"] == {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
        "exclusiveMaximum": True,
        "default": 0.5,
    }
    assert props["items"]["minItems"] == 0 and props["items"]["maxItems"] == 4


def test_unions_maps_and_wire_names() -> None:
    props = spec_schema()
    assert props["maybe"] == {"type": "integer", "nullable": True}
    assert props["port"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "default": 80,
    }
    assert props["at"] == {"type": "string", "format": "date-time", "nullable": True}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["free"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    assert props["kept"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    }
    assert "providerID" in props and "provider_id" not in props


def test_top_level_and_conditions() -> None:
    schema = schema_for(Sample)
    assert schema["description"] == "A sample kind."
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["properties"]["apiVersion"] == {"type": "string"}
    assert "required" not in schema  # spec has a default factory
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["properties"]["status"]["enum"] == ["False", "True", "Unknown"]


def test_crd_names_subresources_columns_and_structural() -> None:
    (crd,) = crd_for(Sample)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "samples.unit.kubetrio.dev"
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "plural": "samples",
        "singular": "sample",
        "kind": "Sample",
        "listKind": "SampleList",
        "categories": ["unit"],
    }
    (version,) = spec["versions"]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.size",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert version["additionalPrinterColumns"] == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}
    ]
    assert check_crd(crd) == []


def test_versions_of_one_kind_become_one_crd() -> None:
    (crd,) = crd_for(BoxV1, BoxV2)
    versions = crd["spec"]["versions"]
    assert [(v["name"], v["storage"]) for v in versions] == [("v1", True), ("v2", False)]
    assert "colour" in versions[1]["schema"]["openAPIV3Schema"]["properties"]
    assert check_crd(crd) == []
    with pytest.raises(
        CrdError, match=r"exactly one version must be storage=True, got \['v1', 'v3'\]"
    ):
        crd_for(BoxV1, BoxV3)
    with pytest.raises(CrdError, match="got none"):
        crd_for(BoxV2)


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (str | bool, r"Bad\.spec\.field: unsupported union of BoolType, StrType"),
        (tuple[int, str], r"Bad\.spec\.field: unsupported field type TupleType"),
        (dict[int, str], r"Bad\.spec\.field: map keys must be str"),
        (Literal["a", 1], r"Bad\.spec\.field: enum values must be all strings or all integers"),
    ],
)
def test_unsupported_types_name_the_field(annotation: Any, message: str) -> None:
    spec_type = msgspec.defstruct("BadSpec", [("field", annotation)], bases=(Model,), kw_only=True)
    cls = msgspec.defstruct("Bad", [("spec", spec_type)], bases=(KubeObject,), kw_only=True)
    with pytest.raises(CrdError, match=message):
        schema_for(cls)


class Node(Model, kw_only=True):
    children: tuple[Node, ...] = ()


def test_recursive_types_are_refused() -> None:
    tree = msgspec.defstruct("Tree", [("spec", Node)], bases=(KubeObject,), kw_only=True)
    with pytest.raises(CrdError, match=r"Tree\.spec\.children\[\]: recursive type Node"):
        schema_for(tree)


# -- property: the wire form of any typed value passes the generated schema

_names = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
_conditions = st.lists(
    st.builds(
        Condition,
        type=_names,
        status=st.sampled_from(["True", "False", "Unknown"]),
        reason=_names,
        message=st.text(max_size=20),
        last_transition_time=st.just("2026-01-01T00:00:00Z"),
        observed_generation=st.integers(0, 2**31),
    ),
    unique_by=lambda c: c.type,
    max_size=3,
).map(tuple)
_specs = st.builds(
    SampleSpec,
    size=st.integers(1, 5),
    mode=st.sampled_from(["a", "b"]),
    maybe=st.none() | st.integers(),
    port=st.integers(0, 65535) | _names,
    at=st.none() | st.datetimes(timezones=st.just(UTC)),
    labels=st.dictionaries(_names, st.text(max_size=5), max_size=3),
    free=st.dictionaries(_names, st.integers() | st.text(max_size=3), max_size=3),
    tags=st.frozensets(_names, max_size=3),
    items=st.lists(st.builds(Inner, key=_names, weight=st.floats(0.01, 0.99)), max_size=4).map(
        tuple
    ),
    provider_id=st.text(max_size=10),
    flag=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(spec=_specs, conditions=_conditions)
def test_every_encoded_value_validates(spec: SampleSpec, conditions: tuple[Condition, ...]) -> None:
    schema = schema_for(Sample)
    obj = Sample(spec=spec, status=SampleStatus(conditions=conditions))
    wire = msgspec.json.decode(msgspec.json.encode(obj))
    wire.update(apiVersion="unit.kubetrio.dev/v1", kind="Sample")
    assert validate(schema, wire) == []
    assert list_sets_and_maps(schema, wire) == []


def test_schema_refuses_what_the_types_refuse() -> None:
    schema = schema_for(Sample)
    bad = {"spec": {"size": 9, "mode": "c", "items": [{"key": "UP"}]}}
    fields = sorted(cause.field for cause in validate(schema, bad))
    assert fields == ["spec.items[0].key", "spec.mode", "spec.size"]


class Shape(Model, kw_only=True):
    """A typed form of a raw field."""

    size: int = 0
    zone: str = ""


class MarkedSpec(Model, kw_only=True):
    count: Int32 = 0
    seen: DateTime | None = None
    selector: Annotated[dict[str, str], Atomic] = {}
    capacity: dict[str, Quantity] = {}
    raw: Annotated[dict[str, Any], SchemaOf(Shape, required=("zone",)), PreserveUnknownFields] = {}


@resource(group="unit.kubetrio.dev", version="v1")
class Marked(KubeObject, kw_only=True):
    spec: MarkedSpec = msgspec.field(default_factory=MarkedSpec)


def test_markers() -> None:
    props = schema_for(Marked)["properties"]["spec"]["properties"]
    assert props["count"] == {"type": "integer", "format": "int32"}
    assert props["seen"] == {"type": "string", "format": "date-time", "nullable": True}
    assert props["selector"]["x-kubernetes-map-type"] == "atomic"
    quantity = props["capacity"]["additionalProperties"]
    assert quantity["x-kubernetes-int-or-string"] is True and quantity["pattern"].startswith("^(")
    assert props["raw"] == {
        "type": "object",
        "description": "A typed form of a raw field.",
        "properties": {"size": {"type": "integer"}, "zone": {"type": "string"}},
        "required": ["zone"],
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert validate(schema_for(Marked), {"spec": {"raw": {"size": 1}}})[0].field == "spec.raw.zone"
    assert check_crd(crd_for(Marked)[0]) == []


def test_rbac_helpers_address_declared_kinds() -> None:
    from kubetrio.runtime.gen.rbac import cached, on

    (listing,) = cached(Sample.KIND)
    status = on(Sample.KIND, "patch", subresource="status")
    assert (listing.api_groups, listing.resources) == (("unit.kubetrio.dev",), ("samples",))
    assert status.resources == ("samples/status",)
