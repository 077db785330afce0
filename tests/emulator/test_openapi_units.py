"""Pure pieces of the OpenAPI publishing and built-in field validation."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.api.registry import BUILTIN_KINDS, lookup
from kubetrio.emulator import errors, fieldcheck, openapi_proto
from kubetrio.emulator.kinds import ResourceTypes, from_crd, from_kind_info
from kubetrio.emulator.openapi import _negotiate
from kubetrio.emulator.openapi_paths import resource_paths
from kubetrio.emulator.openapi_schemas import (
    builtin_definitions,
    crd_definitions,
    crd_definitions_v3,
    crd_name,
    to_v3,
)


def test_shipped_definitions_cover_every_builtin_kind_and_its_refs() -> None:
    defs = builtin_definitions()
    kinds = {
        (g["group"], g["version"], g["kind"])
        for d in defs.values()
        for g in d.get("x-kubernetes-group-version-kind", ())
    }
    for info in BUILTIN_KINDS:
        assert (info.group, info.version, info.kind) in kinds
        assert (info.group, info.version, info.kind + "List") in kinds
    text = repr(defs)
    for ref in set(part.split("'")[0] for part in text.split("#/definitions/")[1:]):
        assert ref in defs, ref
    assert defs["io.k8s.api.core.v1.PodSpec"]["properties"]["nodeName"]["description"]


def test_v3_wraps_refs_with_siblings_in_allof() -> None:
    v3 = to_v3("x", builtin_definitions()["io.k8s.api.core.v1.Pod"])
    assert v3["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "description" in v3["properties"]["metadata"]
    bare = to_v3("y", {"items": {"$ref": "#/definitions/a.B"}, "type": "array"})
    assert bare["items"] == {"$ref": "#/components/schemas/a.B"}
    ios = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    assert to_v3(ios, builtin_definitions()[ios])["oneOf"] == [
        {"type": "integer"},
        {"type": "string"},
    ]


def _crd(schema: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "things.a.example.org"},
        "spec": {
            "group": "a.example.org",
            "names": {"plural": "things", "kind": "Thing"},
            "scope": "Cluster",
            "versions": [{"name": "v2", "served": True, "storage": True, "schema": schema}],
        },
    }


def test_crd_definitions_as_the_publisher_names_them() -> None:
    assert crd_name("a.example.org", "v2", "Thing") == "org.example.a.v2.Thing"
    crd = _crd({"openAPIV3Schema": {"type": "object", "nullable": True, "properties": {}}})
    rt = from_crd(crd)
    v2 = crd_definitions(rt, crd)
    assert set(v2) == {"org.example.a.v2.Thing", "org.example.a.v2.ThingList"}
    assert "nullable" not in v2["org.example.a.v2.Thing"]  # Swagger 2.0 has no nullable
    v3 = crd_definitions_v3(rt, crd)
    assert v3["org.example.a.v2.Thing"]["nullable"] is True


@pytest.mark.parametrize("schema", [None, "nonsense", {"openAPIV3Schema": ["a"]}, {}])
def test_malformed_crd_schemas_still_publish(schema: Any) -> None:
    crd = _crd(schema)
    rt = from_crd(crd)
    thing = crd_definitions_v3(rt, crd)["org.example.a.v2.Thing"]
    assert thing["type"] == "object"
    assert set(thing["properties"]) == {"apiVersion", "kind", "metadata"}


def test_duplicate_fields_are_found_with_their_paths() -> None:
    body = b'{"a":1,"b":{"c":1,"c":2},"l":[{"x":1,"x":1}],"a":2}'
    assert fieldcheck.duplicate_fields(body) == ["a", "b.c", "l[0].x"]
    assert fieldcheck.duplicate_fields(b"{not json") == []


def test_prune_unknown_keeps_maps_and_free_form_objects() -> None:
    obj: dict[str, Any] = {
        "metadata": {"labels": {"any": "thing"}, "nope": 1},
        "spec": {"containers": [{"name": "c", "what": 1}], "nodeSelector": {"k": "v"}},
        "top": True,
    }
    found = fieldcheck.prune_unknown("io.k8s.api.core.v1.Pod", obj)
    assert sorted(found) == ["metadata.nope", "spec.containers[0].what", "top"]
    assert obj == {
        "metadata": {"labels": {"any": "thing"}},
        "spec": {"containers": [{"name": "c"}], "nodeSelector": {"k": "v"}},
    }
    event: dict[str, Any] = {"involvedObject": {"kind": "Pod"}, "series": {"count": 1}}
    assert fieldcheck.prune_unknown("io.k8s.api.core.v1.Event", event) == []


def test_check_wording_per_operation() -> None:
    rt = from_kind_info(lookup("apps/v1", "Deployment"))
    with pytest.raises(errors.ApiError) as err:
        fieldcheck.check(rt, "v1", {"spec": {"x": 1}}, {"fieldValidation": "Strict"}, None, "patch")
    assert err.value.message == 'strict decoding error: unknown field "spec.x"'
    with pytest.raises(errors.ApiError) as err:
        fieldcheck.check(rt, "v1", {"spec": {"x": 1}}, {}, None, "apply")
    assert err.value.message == (
        "failed to create typed patch object (apps/v1, Kind=Deployment): .spec.x: field not "
        "declared in schema"
    )
    headers = fieldcheck.check(rt, "v1", {"spec": {"x": 1}}, {}, None, "create")
    assert headers == [("Warning", '299 - "unknown field \\"spec.x\\""')]


def test_accept_negotiation() -> None:
    assert _negotiate("") == "json"
    assert _negotiate("application/json, */*") == "json"
    assert _negotiate(openapi_proto.MIME) == "proto"
    assert _negotiate(f"{openapi_proto.MIMES[1]}, application/json") == "proto"
    assert _negotiate("text/html") is None


def test_proto_round_trip_of_a_small_document() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "parameters": [{"name": "n", "in": "path", "required": True, "type": "string"}],
                "patch": {
                    "consumes": ["application/merge-patch+json"],
                    "parameters": [
                        {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/A"}},
                        {"name": "fieldValidation", "in": "query", "type": "string"},
                    ],
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": "#/definitions/A"}}
                    },
                    "x-kubernetes-action": "patch",
                },
            }
        },
        "definitions": {
            "A": {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "A", "version": "v1"}],
            }
        },
    }
    msg: Any = openapi_proto.decode(openapi_proto.encode(doc))
    a = msg.definitions.additional_properties[0]
    assert a.name == "A"
    assert list(a.value.type.value) == ["object"]
    m = a.value.properties.additional_properties[0]
    assert m.name == "m"
    assert list(m.value.additional_properties.schema.type.value) == ["string"]
    assert a.value.vendor_extension[0].name == "x-kubernetes-group-version-kind"
    patch = msg.paths.path[0].value.patch
    assert patch.parameters[0].parameter.body_parameter.schema._ref == "#/definitions/A"
    query = patch.parameters[1].parameter.non_body_parameter.query_parameter_sub_schema
    assert query.name == "fieldValidation"
    assert patch.responses.response_code[0].name == "200"
    assert patch.responses.response_code[0].value.response.schema.schema._ref == "#/definitions/A"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"spec": "x"}, "string into Go struct field Pod.spec of type v1.PodSpec"),
        (
            {"spec": {"containers": {"name": "c"}}},
            "object into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        (
            {"spec": {"containers": [{"name": 1}]}},
            "number into Go struct field Container.spec.containers.name of type string",
        ),
        (
            {"metadata": {"labels": {"a": 1}}},
            "number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            {"spec": {"priority": 1.5}},
            "number 1.5 into Go struct field PodSpec.spec.priority of type int32",
        ),
        (
            {"spec": {"hostNetwork": "yes"}},
            "string into Go struct field PodSpec.spec.hostNetwork of type bool",
        ),
    ],
)
def test_values_go_cannot_decode_fail_whatever_the_directive(obj: Any, message: str) -> None:
    rt = from_kind_info(lookup("v1", "Pod"))
    with pytest.raises(errors.ApiError) as err:
        fieldcheck.check(rt, "v1", obj, {"fieldValidation": "Ignore"}, None, "create")
    assert err.value.code == 400
    assert err.value.message == (
        f'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal {message}'
    )


def test_custom_json_forms_and_nulls_are_accepted() -> None:
    rt = from_kind_info(lookup("v1", "Pod"))
    obj = {
        "metadata": {"creationTimestamp": None, "labels": None},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": 8080}},
                    "readinessProbe": {"httpGet": {"port": "http"}},
                }
            ]
        },
    }
    assert fieldcheck.check(rt, "v1", obj, {"fieldValidation": "Strict"}, None, "create") == []


def test_proto_encoding_skips_values_of_the_wrong_type() -> None:
    doc = {
        "swagger": "2.0",
        "definitions": {
            "A": {
                "type": 5,
                "required": [1, {"x": 2}],
                "description": ["not", "text"],
                "maxLength": "long",
                "uniqueItems": "yes",
                "properties": {"p": "not a schema", "q": {"type": "string"}},
                "items": 7,
                "additionalProperties": "x",
                "enum": "abc",
            }
        },
    }
    msg: Any = openapi_proto.decode(openapi_proto.encode(doc))
    a = msg.definitions.additional_properties[0].value
    assert [p.name for p in a.properties.additional_properties] == ["p", "q"]
    assert list(a.properties.additional_properties[1].value.type.value) == ["string"]
    assert a.max_length == 0


def _refs_in(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return own.union(*(_refs_in(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs_in(v) for v in node))
    return set()


def test_every_builtin_operation_refers_to_a_shipped_definition() -> None:
    defs = builtin_definitions()
    for rt in ResourceTypes().all():
        for v in rt.versions:
            refs = _refs_in(resource_paths(rt, v, v3=False))
            assert refs, rt.key
            missing = {r for r in refs if r.removeprefix("#/definitions/") not in defs}
            assert not missing, (rt.key, missing)


def test_scale_subresource_operations_speak_autoscaling_scale() -> None:
    crd = _crd({"openAPIV3Schema": {"type": "object"}})
    crd["spec"]["versions"][0]["subresources"] = {"scale": {}, "status": {}}
    paths = resource_paths(from_crd(crd), "v2", v3=True)
    scale = paths["/apis/a.example.org/v2/things/{name}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    assert scale["put"]["requestBody"]["content"]["*/*"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    }
    status = paths["/apis/a.example.org/v2/things/{name}/status"]["patch"]
    assert status["x-kubernetes-group-version-kind"]["kind"] == "Thing"
    assert "application/strategic-merge-patch+json" not in status["requestBody"]["content"]
    assert "/apis/a.example.org/v2/things" in paths  # cluster-scoped: no namespace, no "all"
