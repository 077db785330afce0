"""Custom resources are validated, pruned and defaulted against their CRD's structural schema
as kube-apiserver does: over HTTP through pykube-ng, our client and kubectl."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import yaml

from kubetrio.api.machine import Machine
from kubetrio.cmd.assets import crd_documents
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from tests.helpers.crd_schema import (
    CRDS,
    MERGE,
    SCHEMA,
    WIDGETS,
    causes,
    crd,
    post,
    widget,
    with_crd,
)
from tests.helpers.kube import kubectl_of

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"


RULES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    (
        "type",
        {"size": "3"},
        [
            (
                "FieldValueTypeInvalid",
                "spec.size",
                'Invalid value: "string": spec.size in body must be of type integer: "string"',
            )
        ],
    ),
    ("required", {"size": None}, [("FieldValueRequired", "spec.size", "Required value")]),
    (
        "maximum",
        {"size": 11},
        [
            (
                "FieldValueInvalid",
                "spec.size",
                "Invalid value: 11: spec.size in body should be less than or equal to 10",
            )
        ],
    ),
    (
        "minimum",
        {"size": 0},
        [
            (
                "FieldValueInvalid",
                "spec.size",
                "Invalid value: 0: spec.size in body should be greater than or equal to 1",
            )
        ],
    ),
    (
        "exclusive bounds",
        {"ratio": 1},
        [
            (
                "FieldValueInvalid",
                "spec.ratio",
                "Invalid value: 1: spec.ratio in body should be less than 1",
            )
        ],
    ),
    (
        "exclusiveMinimum",
        {"ratio": 0.0},
        [
            (
                "FieldValueInvalid",
                "spec.ratio",
                "Invalid value: 0: spec.ratio in body should be greater than 0",
            )
        ],
    ),
    (
        "multipleOf",
        {"step": 7},
        [
            (
                "FieldValueInvalid",
                "spec.step",
                "Invalid value: 7: spec.step in body should be a multiple of 5",
            )
        ],
    ),
    (
        "enum",
        {"tier": "bronze"},
        [
            (
                "FieldValueNotSupported",
                "spec.tier",
                'Unsupported value: "bronze": supported values: "gold", "silver"',
            )
        ],
    ),
    (
        "maxLength",
        {"code": "abcdef"},
        [("FieldValueTooLong", "spec.code", "Too long: may not be more than 5 bytes")],
    ),
    (
        "minLength",
        {"code": "a"},
        [
            (
                "FieldValueInvalid",
                "spec.code",
                'Invalid value: "a": spec.code in body should be at least 2 chars long',
            )
        ],
    ),
    (
        "pattern",
        {"code": "AB"},
        [
            (
                "FieldValueInvalid",
                "spec.code",
                "Invalid value: \"AB\": spec.code in body should match '^[a-z]+$'",
            )
        ],
    ),
    (
        "format",
        {"when": "yesterday"},
        [
            (
                "FieldValueTypeInvalid",
                "spec.when",
                'Invalid value: "yesterday": spec.when in body must be of type date-time: '
                '"yesterday"',
            )
        ],
    ),
    (
        "minItems",
        {"tags": []},
        [
            (
                "FieldValueInvalid",
                "spec.tags",
                "Invalid value: 0: spec.tags in body should have at least 1 items",
            )
        ],
    ),
    (
        "maxItems",
        {"tags": ["a", "b", "c"]},
        [("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items")],
    ),
    (
        "list-type set reports a repeat once",
        {"tags": ["a", "a", "a"], "ports": [{"name": "x"}, 3]},
        [
            (
                "FieldValueTypeInvalid",
                "spec.ports[1]",
                'Invalid value: "integer": spec.ports[1] in body must be of type object: "integer"',
            ),
            ("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items"),
            (
                "FieldValueInvalid",
                "spec.ports[1]",
                "Invalid value: 3: must be an object for an array of list-type map",
            ),
            ("FieldValueDuplicate", "spec.tags[1]", 'Duplicate value: "a"'),
        ],
    ),
    (
        "list-type set",
        {"tags": ["a", "a"]},
        [("FieldValueDuplicate", "spec.tags[1]", 'Duplicate value: "a"')],
    ),
    (
        "list-type map",
        {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]},
        [("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"http"}')],
    ),
    (
        "items",
        {"ports": [{"port": 80}]},
        [("FieldValueRequired", "spec.ports[0].name", "Required value")],
    ),
    (
        "additionalProperties",
        {"labels": {"a": 1}},
        [
            (
                "FieldValueTypeInvalid",
                "spec.labels.a",
                'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
            )
        ],
    ),
    (
        "minProperties",
        {"labels": {}},
        [
            (
                "FieldValueInvalid",
                "spec.labels",
                "Invalid value: 0: spec.labels in body should have at least 1 properties",
            )
        ],
    ),
    (
        "maxProperties",
        {"labels": {"a": "1", "b": "2", "c": "3"}},
        [("FieldValueTooMany", "spec.labels", "Too many: 3: must have at most 2 items")],
    ),
    (
        "boolean",
        {"enabled": "yes"},
        [
            (
                "FieldValueTypeInvalid",
                "spec.enabled",
                'Invalid value: "string": spec.enabled in body must be of type boolean: "string"',
            )
        ],
    ),
    (
        "int-or-string",
        {"port": 1.5},
        [
            (
                "FieldValueTypeInvalid",
                "spec.port",
                'Invalid value: "number": spec.port in body must be of type integer,string: '
                '"number"',
            )
        ],
    ),
    (
        "embedded resource",
        {"template": {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1}}},
        [
            (
                "FieldValueTypeInvalid",
                "spec.template.spec.x",
                'Invalid value: "integer": spec.template.spec.x in body must be of type string: '
                '"integer"',
            )
        ],
    ),
    (
        "embedded resource TypeMeta",
        {"template": {"kind": 5, "spec": {"x": "y"}}},
        [
            ("FieldValueRequired", "spec.template.apiVersion", "Required value"),
            ("FieldValueInvalid", "spec.template.kind", "Invalid value: 5: must be a string"),
        ],
    ),
    (
        "oneOf",
        {"choice": {"a": "1", "b": "2"}},
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). '
                "Found 2 valid alternatives",
            )
        ],
    ),
    (
        "not",
        {"level": 13},
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.level" must not validate the schema (not)',
            )
        ],
    ),
    (
        "anyOf",
        {"either": "yy"},
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.either" must validate at least one schema (anyOf)',
            ),
            (
                "FieldValueInvalid",
                "spec.either",
                "Invalid value: \"yy\": spec.either in body should match '^x'",
            ),
        ],
    ),
    (
        "allOf",
        {"both": "b"},
        [
            (
                "FieldValueInvalid",
                "spec.both",
                'Invalid value: "b": spec.both in body should be at least 2 chars long',
            ),
            (
                "FieldValueInvalid",
                "spec.both",
                "Invalid value: \"b\": spec.both in body should match '^a'",
            ),
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.both" must validate all the schemas (allOf). '
                "None validated",
            ),
        ],
    ),
    (
        "nullable",
        {"note": None, "tier": None},
        [],
    ),
]


@pytest.mark.parametrize(("rule", "spec", "want"), RULES, ids=[r[0] for r in RULES])
async def test_each_schema_rule_answers_422_with_kubes_causes(
    emu: Emulator,
    mock_clock: trio.testing.MockClock,
    rule: str,
    spec: dict[str, Any],
    want: list[tuple[str, str, str]],
) -> None:
    await with_crd(emu)
    body = widget()
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if not (k == "size" and v is None)}
    r = await post(emu, WIDGETS, body)
    if not want:
        assert r.status_code == 201, r.text
        stored = r.json()["spec"]
        # A null in a nullable field is kept; in a non-nullable one without default, dropped.
        assert stored["note"] is None and "tier" not in stored
        return
    assert r.status_code == 422, r.text
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["details"] == {
        "name": "w1",
        "group": "example.com",
        "kind": "Widget",
        "causes": [{"reason": t, "message": m, "field": f} for t, f, m in want],
    }
    lines = [f"{f}: {m}" for _t, f, m in want]
    text = lines[0] if len(lines) == 1 else "[" + ", ".join(lines) + "]"
    assert status["message"] == f'Widget.example.com "w1" is invalid: {text}'


async def test_every_violation_is_its_own_cause(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await with_crd(emu)
    body = widget("a-very-long-name", size=99, tier="x")
    body["metadata"]["name"] = "toolongname"
    r = await post(emu, WIDGETS, body)
    assert r.status_code == 422, r.text
    fields = [c["field"] for c in r.json()["details"]["causes"]]
    assert fields == ["metadata.name", "spec.size", "spec.tier"]


async def test_pruning_drops_undeclared_fields_and_keeps_preserved_ones(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await with_crd(emu)
    body = widget(
        bogus=1,
        extra={"anything": {"goes": [1, 2]}},
        template={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"x": "y", "dropped": True},
            "dropped": 1,
        },
        ports=[{"name": "http", "port": 80, "proto": "TCP"}],
    )
    body["topLevel"] = "gone"
    body["metadata"]["bogus"] = "gone too"
    r = await post(emu, WIDGETS, body, "?fieldValidation=Ignore")
    assert r.status_code == 201, r.text
    assert "Warning" not in r.headers
    client = Client.from_url(emu.url, token=emu.token)
    raw = json.loads(await client.request("GET", WIDGETS + "/w1"))
    assert "topLevel" not in raw
    assert "bogus" not in raw["metadata"]
    spec = raw["spec"]
    assert "bogus" not in spec
    assert spec["extra"] == {"anything": {"goes": [1, 2]}}
    assert spec["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"x": "y"},
    }
    assert spec["ports"] == [{"name": "http", "port": 80}]


async def test_field_validation_strict_warn_and_default(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await with_crd(emu)
    r = await post(emu, WIDGETS, widget(foo=1, bar=2), "?fieldValidation=Strict")
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest"
    assert r.json()["message"] == (
        'strict decoding error: unknown field "spec.bar", unknown field "spec.foo"'
    )
    # Absent, the server warns (kube's default is Warn), one header value per field.
    raw = EmuClient(emu.url, emu.token)
    reply = await raw.request("POST", WIDGETS, widget("w2", foo=1))
    assert reply.status == 201
    assert reply.headers["warning"] == '299 - "unknown field \\"spec.foo\\""'
    assert "foo" not in reply.json()["spec"]
    reply = await raw.request("POST", WIDGETS + "?fieldValidation=Bogus", widget("w3"))
    assert reply.status == 422  # invalid CreateOptions
    assert reply.json()["details"]["causes"][0]["field"] == "fieldValidation"
    # Patches are checked on what they produce.
    reply = await raw.request(
        "PATCH",
        WIDGETS + "/w2?fieldValidation=Strict",
        {"spec": {"nope": 1}},
        content_type="application/merge-patch+json",
    )
    assert reply.status == 400
    assert reply.json()["message"] == 'strict decoding error: unknown field "spec.nope"'


async def test_defaults_on_create_and_on_read_of_older_objects(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    without_default = copy.deepcopy(SCHEMA)
    del without_default["properties"]["spec"]["properties"]["mode"]["default"]
    await with_crd(emu, without_default)
    r = await post(emu, WIDGETS, widget("old"))
    assert r.status_code == 201 and "mode" not in r.json()["spec"]
    old_rv = r.json()["metadata"]["resourceVersion"]

    raw = EmuClient(emu.url, emu.token)
    current = (await raw.get(CRDS + "/widgets.example.com")).json()
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = SCHEMA
    reply = await raw.request("PUT", CRDS + "/widgets.example.com", current)
    assert reply.status == 200, reply.body

    # Stored before the default existed: a read fills it in, without a new resourceVersion.
    client = Client.from_url(emu.url, token=emu.token)
    old = json.loads(await client.request("GET", WIDGETS + "/old"))
    assert old["spec"]["mode"] == "auto"
    assert old["metadata"]["resourceVersion"] == old_rv
    listed = json.loads(await client.request("GET", WIDGETS))
    assert listed["items"][0]["spec"]["mode"] == "auto"

    # On create; an explicit null in a non-nullable field takes the default too.
    r = await post(emu, WIDGETS, widget("new", mode=None))
    assert r.status_code == 201
    assert r.json()["spec"]["mode"] == "auto"
    r = await post(emu, WIDGETS, widget("set", mode="manual"))
    assert r.json()["spec"]["mode"] == "manual"


async def test_status_subresource_is_validated_and_defaulted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await with_crd(emu)
    assert (await post(emu, WIDGETS, widget())).status_code == 201
    raw = EmuClient(emu.url, emu.token)
    bad = await raw.request(
        "PATCH",
        WIDGETS + "/w1/status",
        {"status": {"phase": "Sleeping", "count": "many"}},
        content_type="application/merge-patch+json",
    )
    assert bad.status == 422, bad.body
    assert [(c["field"], c["reason"]) for c in bad.json()["details"]["causes"]] == [
        ("status.count", "FieldValueTypeInvalid"),
        ("status.phase", "FieldValueNotSupported"),
    ]
    good = await raw.request(
        "PATCH",
        WIDGETS + "/w1/status",
        {"status": {"phase": "Ready"}},
        content_type="application/merge-patch+json",
    )
    assert good.status == 200, good.body
    assert good.json()["status"] == {"phase": "Ready", "count": 0}
    # A main-resource write is validated the same way (merge and JSON patch, PUT).
    bad = await raw.request(
        "PATCH",
        WIDGETS + "/w1",
        [{"op": "replace", "path": "/spec/size", "value": 100}],
        content_type="application/json-patch+json",
    )
    assert bad.status == 422
    current = (await raw.get(WIDGETS + "/w1")).json()
    current["spec"]["tier"] = "bronze"
    bad = await raw.request("PUT", WIDGETS + "/w1", current)
    assert bad.status == 422
    assert bad.json()["details"]["causes"][0]["field"] == "spec.tier"


async def test_tightened_schema_ratchets_unchanged_values(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """An object stored under an older, looser schema keeps taking status writes and
    unrelated changes; only a changed invalid value is refused (validation ratcheting)."""
    loose = copy.deepcopy(SCHEMA)
    loose["properties"]["spec"]["properties"]["size"]["maximum"] = 100
    await with_crd(emu, loose)
    assert (await post(emu, WIDGETS, widget(size=50))).status_code == 201
    raw = EmuClient(emu.url, emu.token)
    current = (await raw.get(CRDS + "/widgets.example.com")).json()
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = SCHEMA
    assert (await raw.request("PUT", CRDS + "/widgets.example.com", current)).status == 200
    ok = await raw.request(
        "PATCH",
        WIDGETS + "/w1/status",
        {"status": {"phase": "Ready"}},
        content_type="application/merge-patch+json",
    )
    assert ok.status == 200, ok.body
    ok = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"tier": "gold"}}, content_type=MERGE)
    assert ok.status == 200, ok.body
    bad = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"size": 60}}, content_type=MERGE)
    assert bad.status == 422


async def test_apply_is_validated(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    await with_crd(emu)
    raw = EmuClient(emu.url, emu.token)
    body = yaml.safe_dump(widget(size=0)).encode()
    r = await raw.request(
        "PATCH",
        WIDGETS + "/w1?fieldManager=test",
        body,
        content_type="application/apply-patch+yaml",
    )
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "spec.size"


async def test_machine_with_numeric_provider_id_is_refused(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for doc in crd_documents():
        r = await post(emu, CRDS, doc)
        assert r.status_code == 201, r.text
    client = Client.from_url(emu.url, token=emu.token)
    machine = {
        "metadata": {"name": "m1", "namespace": "default"},
        "spec": {"class": {"kind": "MachineClass", "name": "small"}, "providerID": 12345},
    }
    with pytest.raises(ApiError) as err:
        await client.create(Machine, machine)
    assert err.value.status == 422
    assert err.value.reason == "Invalid"
    assert err.value.message == (
        'Machine.machine.sapcloud.io "m1" is invalid: spec.providerID: Invalid value: "integer": '
        'spec.providerID in body must be of type string: "integer"'
    )
    machine["spec"]["providerID"] = "sim://vm-1"
    created = await client.create(Machine, machine)
    assert created.spec.provider_id == "sim://vm-1"


BAD_SCHEMAS: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    (
        "untyped field",
        {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
        [
            (
                "FieldValueRequired",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
                "Required value: must not be empty for specified object fields",
            )
        ],
    ),
    (
        "array without items",
        {"type": "object", "properties": {"l": {"type": "array"}}},
        [
            (
                "FieldValueRequired",
                "spec.versions[0].schema.openAPIV3Schema.properties[l].items",
                "Required value: must be specified",
            )
        ],
    ),
    (
        "root not object",
        {"type": "array", "items": {"type": "string"}},
        [
            (
                "FieldValueInvalid",
                "spec.versions[0].schema.openAPIV3Schema.type",
                'Invalid value: "array": must be object at the root',
            )
        ],
    ),
    (
        "type in a value validation",
        {
            "type": "object",
            "properties": {"a": {"type": "string", "anyOf": [{"type": "integer"}]}},
        },
        [
            (
                "FieldValueForbidden",
                "spec.versions[0].schema.openAPIV3Schema.properties[a].anyOf[0].type",
                "Forbidden: must be empty to be structural",
            )
        ],
    ),
    (
        "value validation naming an unspecified field",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "anyOf": [{"properties": {"b": {"minLength": 1}}}],
        },
        [
            (
                "FieldValueRequired",
                "spec.versions[0].schema.openAPIV3Schema.properties[b]",
                "Required value: because it is defined in "
                "spec.versions[0].schema.openAPIV3Schema.anyOf[0].properties[b]",
            )
        ],
    ),
    (
        "metadata beyond name",
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
            },
        },
        [
            (
                "FieldValueForbidden",
                "spec.versions[0].schema.openAPIV3Schema.properties[metadata]",
                "Forbidden: must not specify anything other than name and generateName, but "
                "metadata is implicitly specified",
            )
        ],
    ),
    (
        "pattern RE2 cannot compile",
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(?=a)"}}},
        [
            (
                "FieldValueInvalid",
                "spec.versions[0].schema.openAPIV3Schema.properties[s].pattern",
                'Invalid value: "^(?=a)": must be a valid regular expression, but isn\'t: '
                "error parsing regexp: invalid perl operator: (?=",
            )
        ],
    ),
    (
        "default of the wrong type",
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "default": "one"}},
        },
        [
            (
                "FieldValueTypeInvalid",
                "spec.versions[0].schema.openAPIV3Schema.properties[n].default",
                'Invalid value: "string":  in body must be of type integer: "string"',
            )
        ],
    ),
    (
        "default with unknown fields",
        {
            "type": "object",
            "properties": {
                "o": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "default": {"a": "x", "b": "y"},
                }
            },
        },
        [
            (
                "FieldValueInvalid",
                "spec.versions[0].schema.openAPIV3Schema.properties[o].default",
                'Invalid value: {"a":"x","b":"y"}: must not have unknown fields',
            )
        ],
    ),
]


@pytest.mark.parametrize(("case", "schema", "want"), BAD_SCHEMAS, ids=[b[0] for b in BAD_SCHEMAS])
async def test_crd_with_unservable_schema_is_refused(
    emu: Emulator,
    mock_clock: trio.testing.MockClock,
    case: str,
    schema: dict[str, Any],
    want: list[tuple[str, str, str]],
) -> None:
    r = await post(emu, CRDS, crd(schema))
    assert r.status_code == 422, r.text
    status = r.json()
    assert causes(status) == want
    assert status["message"].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
    )
    # The same schema is refused on update of a served CRD too.
    assert (await post(emu, CRDS, crd())).status_code == 201
    raw = EmuClient(emu.url, emu.token)
    current = (await raw.get(CRDS + "/widgets.example.com")).json()
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
    r2 = await raw.request("PUT", CRDS + "/widgets.example.com", current)
    assert r2.status == 422
    assert causes(r2.json()) == want


KUBECTL_VERSIONS = ("1.27", "1.33")


@pytest.mark.kubectl
@pytest.mark.slow
@pytest.mark.parametrize("version", KUBECTL_VERSIONS)
async def test_kubectl_prints_the_causes_of_a_bad_machine(
    emu: Emulator, tmp_path: Path, version: str
) -> None:
    kubectl = kubectl_of(version, emu, tmp_path)
    # kubectl 1.27 reads /openapi/v2 before it validates; with --validate=false it sends
    # fieldValidation=Ignore and leaves the checking to the server's schema alone.
    validate = ["--validate=false"] if version == "1.27" else []
    await kubectl.run("apply", *validate, "-k", str(CRD_DIR))
    bad = {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": "m1", "namespace": "default"},
        "spec": {"providerID": 12345, "class": {"name": 7}},
    }

    async def apply(doc: dict[str, Any], *flags: str) -> Any:
        return await kubectl.run(
            "apply", *flags, "-f", "-", stdin=yaml.safe_dump(doc).encode(), check=False
        )

    proc = await apply(bad, *validate)
    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        'The Machine "m1" is invalid: \n'
        '* spec.class.name: Invalid value: "integer": spec.class.name in body must be of type '
        'string: "integer"\n'
        '* spec.providerID: Invalid value: "integer": spec.providerID in body must be of type '
        'string: "integer"\n'
    )
    bad["spec"] = {"providerID": "sim://1", "bogus": True}
    if version == "1.27":
        proc = await apply(bad, *validate)
        assert proc.returncode == 0, proc.stderr
    else:
        # kubectl's default --validate=strict sends fieldValidation=Strict.
        proc = await apply(bad)
        assert proc.returncode == 1
        assert proc.stderr.decode() == (
            'Error from server (BadRequest): error when creating "STDIN": strict decoding '
            'error: unknown field "spec.bogus"\n'
        )
        proc = await apply(bad, "--validate=warn")
        assert proc.returncode == 0
        assert 'Warning: unknown field "spec.bogus"' in proc.stderr.decode()
    got = await kubectl.json("get", "machine", "m1")
    assert got["spec"] == {"providerID": "sim://1"}


async def test_crd_without_a_schema_is_refused(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    body = crd()
    del body["spec"]["versions"][0]["schema"]
    r = await post(emu, CRDS, body)
    assert r.status_code == 422
    assert causes(r.json()) == [
        (
            "FieldValueRequired",
            "spec.versions[0].schema.openAPIV3Schema",
            "Required value: schemas are required",
        )
    ]


CEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                {
                    "rule": "!has(self.mode) || self.mode != 'off' || self.max == 0",
                    "reason": "FieldValueForbidden",
                    "fieldPath": ".max",
                    "message": "must be 0 when mode is off",
                },
            ],
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer", "maximum": 100},
                "mode": {"type": "string"},
                "zone": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "zone is immutable"}
                    ],
                },
                "title": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self.startsWith('w-')"}],
                },
            },
        }
    },
}


def cel_widget(**spec: Any) -> dict[str, Any]:
    body = widget(**spec)
    del body["spec"]["size"]
    return body


@pytest.mark.slow
async def test_cel_rules_speak_as_kube_does(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await with_crd(emu, CEL_SCHEMA)
    r = await post(emu, WIDGETS, cel_widget(min=5, max=1, mode="off", title="x"))
    assert r.status_code == 422, r.text
    assert causes(r.json()) == [
        ("FieldValueInvalid", "spec", 'Invalid value: "object": min must not exceed max'),
        ("FieldValueForbidden", "spec.max", "Forbidden: must be 0 when mode is off"),
        (
            "FieldValueInvalid",
            "spec.title",
            "Invalid value: \"string\": failed rule: self.startsWith('w-')",
        ),
    ]
    # A schema error stops the rules, and kube says so in a cause without a field.
    r = await post(emu, WIDGETS, cel_widget(min=5, max=101))
    assert r.status_code == 422
    assert causes(r.json()) == [
        (
            "FieldValueInvalid",
            "spec.max",
            "Invalid value: 101: spec.max in body should be less than or equal to 100",
        )
    ]
    r = await post(emu, WIDGETS, cel_widget(min="5", max=1))
    assert causes(r.json())[-1] == (
        "FieldValueInvalid",
        "<nil>",
        "Invalid value: null: some validation rules were not checked because the object was "
        "invalid; correct the existing errors to complete validation",
    )
    # Transition rules: only on update, against the old value.
    r = await post(emu, WIDGETS, cel_widget(min=1, max=2, zone="a", title="w-1"))
    assert r.status_code == 201, r.text
    raw = EmuClient(emu.url, emu.token)
    bad = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"zone": "b"}}, content_type=MERGE)
    assert bad.status == 422
    assert causes(bad.json()) == [
        ("FieldValueInvalid", "spec.zone", 'Invalid value: "string": zone is immutable')
    ]
    ok = await raw.request("PATCH", WIDGETS + "/w1", {"spec": {"max": 3}}, content_type=MERGE)
    assert ok.status == 200, ok.body


async def test_crd_with_a_rule_that_does_not_compile_is_refused(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    schema = copy.deepcopy(CEL_SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.min <="}]
    r = await post(emu, CRDS, crd(schema))
    assert r.status_code == 422
    [(reason, field, message)] = causes(r.json())
    assert reason == "FieldValueInvalid"
    assert field == (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert "compilation failed: " in message


async def test_crd_asking_to_preserve_unknown_fields_everywhere_is_refused(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    body = crd()
    body["spec"]["preserveUnknownFields"] = True
    r = await post(emu, CRDS, body)
    assert r.status_code == 422
    assert causes(r.json()) == [
        (
            "FieldValueInvalid",
            "spec.preserveUnknownFields",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
            "to true in spec.versions[*].schema instead",
        )
    ]
