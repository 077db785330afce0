"""Property: no input makes the API answer 500 or anything but a JSON Status/object; the
server keeps serving whatever it was sent."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrio.emulator.schema_validate import validate
from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim import serve_world

pytestmark = pytest.mark.slow

FIELDS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "spec",
    "status",
    "op",
    "path",
    "value",
    "from",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "deleteOptions",
    "gracePeriodSeconds",
    "preconditions",
    "uid",
    "resourceVersion",
    "generateName",
    "containers",
    "taints",
    "$patch",
    "$retainKeys",
    "$setElementOrder/taints",
    "nodeName",
    "phase",
    "data",
    "versions",
    "names",
    "group",
    "scope",
    "plural",
    "storage",
    "served",
    "disruptionsAllowed",
    "observedGeneration",
    "dryRun",
    "propagationPolicy",
    "target",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "v1", "Pod", "-", "/a"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=12,
)

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n"},
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "b"},
    "spec": {"selector": {}},
}
# A typed custom resource, so fuzzed bodies also exercise schema validation and pruning.
SPEC = {
    "type": "object",
    "properties": {
        "phase": {"type": "string", "enum": ["", "x"]},
        "values": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
        "data": {"type": "object", "additionalProperties": {"type": "string"}},
        "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
            }
        ],
    },
}
PODS = "/api/v1/namespaces/default/pods"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
THINGS = "/apis/example.com/v1/namespaces/default/things"
THING = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {}}
TARGETS: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("POST", PODS, "application/json", POD),
    ("PUT", f"{PODS}/p", "application/json", POD),
    ("PUT", f"{PODS}/p/status", "application/json", POD),
    ("PATCH", f"{PODS}/p", "application/merge-patch+json", None),
    ("PATCH", f"{PODS}/p", "application/json-patch+json", None),
    ("PATCH", f"{PODS}/p", "application/strategic-merge-patch+json", None),
    ("PATCH", "/api/v1/nodes/n", "application/strategic-merge-patch+json", None),
    ("PATCH", f"{PODS}/p", "application/apply-patch+yaml", POD),
    (
        "POST",
        f"{PODS}/p/eviction",
        "application/json",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}},
    ),
    (
        "POST",
        f"{PODS}/p/binding",
        "application/json",
        {"apiVersion": "v1", "kind": "Binding", "target": {"name": "n"}},
    ),
    ("DELETE", f"{PODS}/p", "application/json", {"kind": "DeleteOptions", "apiVersion": "v1"}),
    ("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", "application/json", PDB),
    (
        "PUT",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b/status",
        "application/json",
        PDB,
    ),
    ("POST", CRDS, "application/json", CRD),
    ("POST", THINGS + "?fieldValidation=Strict", "application/json", THING),
    ("PUT", f"{THINGS}/t", "application/json", THING),
    ("PATCH", f"{THINGS}/t", "application/merge-patch+json", None),
    ("PATCH", f"{THINGS}/t/status", "application/json-patch+json", None),
]

requests = st.lists(
    st.tuples(
        st.integers(0, len(TARGETS) - 1), st.sampled_from(FIELDS), json_values, st.booleans()
    ),
    min_size=1,
    max_size=8,
)
selectors = st.text(alphabet="ab=!,() inotx-./", max_size=12)


def _body(template: dict[str, Any] | None, field: str, value: Any, replace_whole: bool) -> Any:
    if template is None or replace_whole:
        return value
    body = dict(template)
    if field in (
        "name",
        "labels",
        "finalizers",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
    ):
        body["metadata"] = {**body.get("metadata", {}), field: value}
    else:
        body[field] = value
    return body


async def _scenario(reqs: list[tuple[int, str, Any, str]], label: str, fields: str) -> None:
    async with serve_world() as emu:
        client = EmuClient(emu.url, emu.token)
        for body in (NODE, POD):
            path = "/api/v1/nodes" if body is NODE else PODS
            assert (await client.request("POST", path, body)).status == 201
        await client.request("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", PDB)
        await client.request("POST", f"{CRDS}?fieldValidation=Strict", CRD)
        assert (await client.request("POST", THINGS, THING)).status == 201
        for index, field, value, where in reqs:
            method, path, ctype, template = TARGETS[index]
            body = _body(template, field, value, where)
            r = await client.request(method, path, body, content_type=ctype)
            assert r.status != 500 and r.status < 600, (method, path, body, r.body)
            assert r.headers["content-type"] == "application/json"
            r.json()
        # Whatever was accepted for the custom resource holds to its schema.
        schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[index]
        for thing in (await client.get(THINGS)).json()["items"]:
            assert validate(schema, thing) == [], thing
        for path in (PODS, "/api/v1/nodes", "/apis/policy/v1/poddisruptionbudgets", THINGS):
            for accept in ("application/json", "application/json;as=Table;v=v1;g=meta.k8s.io"):
                query = f"?labelSelector={quote(label)}&fieldSelector={quote(fields)}"
                r = await client.get(path + query, headers={"Accept": accept})
                assert r.status in (200, 400), r.body
                r = await client.get(path, headers={"Accept": accept})
                assert r.status == 200, r.body


@settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(reqs=requests, label=selectors, fields=selectors)
def test_no_input_causes_a_server_error(
    reqs: list[tuple[int, str, Any, str]], label: str, fields: str
) -> None:
    trio.run(_scenario, reqs, label, fields)
