"""/openapi/v2 and /openapi/v3 as clients read them, and server-side field validation of
built-in kinds: kubectl 1.27 to 1.33 (1.27 and 1.28 read v2 protobuf for explain and for
whether the server validates fields; later ones read v3), pykube and raw HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
import yaml

from kubetrio.emulator import Emulator, openapi_proto
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.crds import CRD
from tests.helpers.kube import Kubectl, blocking, kubectl_of, pykube_api

VERSIONS = ("1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def gadget(name: str, teeth: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"gears": {"teeth": teeth}},
    }


@pytest.fixture(params=VERSIONS)
def kubectl_v(request: pytest.FixtureRequest, emu: Emulator, tmp_path: Path) -> Kubectl:
    """kubectl of one release beside the kubectl on PATH (skipped when it is missing)."""
    return kubectl_of(request.param, emu, tmp_path)


@pytest.mark.slow
@pytest.mark.kubectl
async def test_explain_builtin_kinds_and_fields(kubectl_v: Kubectl) -> None:
    pods = await kubectl_v.out("explain", "pods")
    assert "KIND:" in pods and "Pod" in pods
    assert "Pod is a collection of containers that can run on a host." in pods
    assert "nodeName" not in pods  # top level only
    assert "<PodSpec>" in pods
    node_name = await kubectl_v.out("explain", "pods.spec.nodeName")
    assert "nodeName <string>" in node_name
    assert "NodeName indicates in which node this pod is scheduled." in " ".join(node_name.split())
    containers = await kubectl_v.out(
        "explain", "deployments.spec.template.spec.containers", "--recursive"
    )
    assert "Deployment" in containers
    assert "containers <[]Container>" in containers
    # --recursive lists nested fields without descriptions, down to the leaves.
    for nested in ("livenessProbe", "readinessProbe", "httpGet", "volumeMounts", "mountPath"):
        assert nested in containers
    # The v2 rendering, whichever document this release reads by default.
    v2 = await kubectl_v.out("explain", "pods.spec.nodeName", "--output=plaintext-openapiv2")
    assert "NodeName indicates in which node this pod is scheduled." in " ".join(v2.split())
    missing = await kubectl_v.run("explain", "pods.spec.noSuchField", check=False)
    assert missing.returncode != 0
    assert b"noSuchField" in missing.stderr


@pytest.mark.slow
@pytest.mark.kubectl
async def test_explain_custom_kind_and_nested_field(kubectl_v: Kubectl) -> None:
    await kubectl_v.apply([CRD])
    kind = await kubectl_v.out("explain", "gadgets")
    assert "Gadget" in kind and "example.com" in kind
    assert "A Gadget is a small mechanical device." in kind
    assert "metadata" in kind and "spec" in kind
    nested = await kubectl_v.out("explain", "gadgets.spec.gears.teeth")
    assert "teeth <integer>" in nested
    assert "Teeth on the largest gear." in nested
    meta = await kubectl_v.out("explain", "gadgets.metadata.name")
    assert "name <string>" in meta  # the ObjectMeta reference resolves


@pytest.mark.kubectl
async def test_apply_validate_strict_warn_false(kubectl_v: Kubectl) -> None:
    bad = yaml.safe_dump(pod("strict", foo="bar")).encode()
    strict = await kubectl_v.run("apply", "--validate=strict", "-f", "-", stdin=bad, check=False)
    assert strict.returncode != 0
    assert (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.foo"'
    ) in strict.stderr.decode()
    assert (await kubectl_v.run("get", "pod", "strict", check=False)).returncode != 0

    warn = await kubectl_v.run("apply", "--validate=warn", "-f", "-", stdin=bad)
    assert 'Warning: unknown field "spec.foo"' in warn.stderr.decode()
    assert b"pod/strict created" in warn.stdout
    stored = await kubectl_v.json("get", "pod", "strict")
    assert "foo" not in stored["spec"]  # dropped, as decoding into the Go type drops it

    off = yaml.safe_dump(pod("lenient", bar=1)).encode()
    ignored = await kubectl_v.run("apply", "--validate=false", "-f", "-", stdin=off)
    assert b"pod/lenient created" in ignored.stdout
    assert b"unknown field" not in ignored.stderr


@pytest.mark.kubectl
@pytest.mark.slow
async def test_apply_custom_resource_twice_uses_merge_patch(
    kubectl_v: Kubectl, emu: Emulator
) -> None:
    await kubectl_v.apply([CRD])
    assert "gadget.example.com/g1 created" in await kubectl_v.apply([gadget("g1", 10)])
    second = await kubectl_v.run(
        "apply", "-v=8", "-f", "-", stdin=yaml.safe_dump(gadget("g1", 12)).encode()
    )
    assert b"gadget.example.com/g1 configured" in second.stdout
    # A strategic merge patch would be refused (415) for a custom resource.
    assert b"application/merge-patch+json" in second.stderr
    assert b"application/strategic-merge-patch+json" not in second.stderr
    got = await kubectl_v.json("get", "gadget", "g1")
    assert got["spec"]["gears"]["teeth"] == 12


@pytest.mark.kubectl
async def test_apply_builtin_twice_uses_strategic_merge(kubectl_v: Kubectl, emu: Emulator) -> None:
    first = {
        **pod("smp"),
        "metadata": {"name": "smp", "namespace": "default", "labels": {"a": "1"}},
    }
    await kubectl_v.apply([first])
    second = {**first, "metadata": {**first["metadata"], "labels": {"a": "2"}}}
    out = await kubectl_v.run("apply", "-v=8", "-f", "-", stdin=yaml.safe_dump(second).encode())
    assert b"application/strategic-merge-patch+json" in out.stderr
    assert (await kubectl_v.json("get", "pod", "smp"))["metadata"]["labels"] == {"a": "2"}


async def test_v3_index_hashes_follow_crds(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    before = (await client.get("/openapi/v3")).json()["paths"]
    assert "api/v1" in before and "apis/apps/v1" in before
    assert "apis/example.com/v1" not in before
    assert (
        await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    ).status == 201
    after = (await client.get("/openapi/v3")).json()["paths"]
    assert after["api/v1"] == before["api/v1"]  # untouched group-versions keep their hash
    url = after["apis/example.com/v1"]["serverRelativeURL"]
    doc = await client.get(url)
    assert doc.status == 200
    assert doc.headers["cache-control"] == "public, immutable"
    assert doc.headers["expires"].endswith(" GMT")
    again_same = await client.get(url, headers={"If-None-Match": doc.headers["etag"]})
    assert again_same.status == 304
    assert again_same.body == b""
    schemas = doc.json()["components"]["schemas"]
    gadget_schema = schemas["com.example.v1.Gadget"]
    assert gadget_schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Gadget", "version": "v1"}
    ]
    assert gadget_schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    patch = doc.json()["paths"]["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}"][
        "patch"
    ]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]

    changed = {**CRD, "spec": {**CRD["spec"], "versions": [dict(CRD["spec"]["versions"][0])]}}
    changed["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {"type": "object", "description": "Now different."}
    }
    current = (
        await client.get(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com"
        )
    ).json()
    changed["metadata"] = current["metadata"]
    put = await client.request(
        "PUT",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
        changed,
    )
    assert put.status == 200
    again = (await client.get("/openapi/v3")).json()["paths"]
    assert again["apis/example.com/v1"] != after["apis/example.com/v1"]
    stale = await client.get(url)
    assert stale.status == 301  # kube-openapi redirects an old hash to the current document
    assert stale.headers["location"] == again["apis/example.com/v1"]["serverRelativeURL"]

    gone = await client.request(
        "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com"
    )
    assert gone.status == 200
    assert "apis/example.com/v1" not in (await client.get("/openapi/v3")).json()["paths"]
    assert (await client.get("/openapi/v3/apis/example.com/v1")).status == 404


async def test_v3_builtin_document(client: EmuClient, mock_clock: trio.testing.MockClock) -> None:
    doc = (await client.get("/openapi/v3/api/v1")).json()
    schemas = doc["components"]["schemas"]
    pod_schema = schemas["io.k8s.api.core.v1.Pod"]
    assert pod_schema["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]
    spec = pod_schema["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert spec["description"].startswith("Specification of the desired behavior of the pod.")
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert "oneOf" in schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert not any("#/definitions/" in r for r in _refs(doc))
    assert all(r.removeprefix("#/components/schemas/") in schemas for r in _refs(doc))
    paths = doc["paths"]
    item = paths["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert set(item) >= {"get", "put", "patch", "delete", "parameters"}
    assert "application/strategic-merge-patch+json" in item["patch"]["requestBody"]["content"]
    assert {p["name"] for p in item["patch"]["parameters"]} >= {
        "dryRun",
        "fieldManager",
        "fieldValidation",
        "force",
    }
    assert paths["/api/v1/namespaces/{namespace}/pods"]["get"]["x-kubernetes-action"] == "list"
    assert "post" in paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    assert "patch" in paths["/api/v1/namespaces/{namespace}/pods/{name}/status"]
    assert "get" in paths["/api/v1/watch/namespaces/{namespace}/pods"]
    assert "/api/v1/nodes/{name}" in paths  # cluster-scoped: no namespace segment
    assert "io.k8s.api.apps.v1.Deployment" not in schemas  # apps/v1 has its own document


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def test_v2_json_protobuf_and_406(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    js = await client.get("/openapi/v2")
    assert js.status == 200
    doc = js.json()
    assert doc["swagger"] == "2.0"
    defs = doc["definitions"]
    assert defs["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]
    assert defs["com.example.v1.Gadget"]["properties"]["metadata"]["$ref"] == (
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert defs["com.example.v1.GadgetList"]["properties"]["items"]["items"] == {
        "$ref": "#/definitions/com.example.v1.Gadget"
    }
    assert "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}" in doc["paths"]

    pb = await client.get("/openapi/v2", headers={"Accept": openapi_proto.MIME})
    assert pb.status == 200
    assert pb.headers["content-type"] == openapi_proto.MIMES[1]
    parsed: Any = openapi_proto.decode(pb.body)
    assert parsed.swagger == "2.0"
    by_name = {d.name: d.value for d in parsed.definitions.additional_properties}
    assert set(by_name) == set(defs)
    pod_pb = by_name["io.k8s.api.core.v1.Pod"]
    assert pod_pb.description == defs["io.k8s.api.core.v1.Pod"]["description"]
    gvk = [e for e in pod_pb.vendor_extension if e.name == "x-kubernetes-group-version-kind"]
    assert yaml.safe_load(gvk[0].value.yaml) == [{"group": "", "kind": "Pod", "version": "v1"}]
    paths = {p.name: p.value for p in parsed.paths.path}
    patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch
    names = [
        p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters
    ]
    assert "fieldValidation" in names

    refused = await client.get("/openapi/v2", headers={"Accept": "application/xml"})
    assert refused.status == 406
    assert refused.json()["reason"] == "NotAcceptable"


async def test_pykube_reads_openapi(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    api = pykube_api(emu)

    def fetch() -> tuple[Any, Any, Any]:
        v2 = api.session.get(url=f"{api.url}/openapi/v2")
        v2.raise_for_status()
        index = api.session.get(url=f"{api.url}/openapi/v3")
        index.raise_for_status()
        url = index.json()["paths"]["apis/apps/v1"]["serverRelativeURL"]
        gv = api.session.get(url=f"{api.url}{url}")
        gv.raise_for_status()
        return v2.json(), index.json(), gv.json()

    v2, index, apps = await blocking(fetch)
    assert "io.k8s.api.apps.v1.Deployment" in v2["definitions"]
    assert set(index["paths"]) >= {"api/v1", "apis/apps/v1", "apis/batch/v1"}
    assert "io.k8s.api.apps.v1.Deployment" in apps["components"]["schemas"]


# ------------------------------------------------------------------ field validation over HTTP

PODS = "/api/v1/namespaces/default/pods"


async def test_field_validation_directives(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    body = pod("fv", foo="x")
    body["spec"]["containers"][0]["bogus"] = 1
    strict = await client.request("POST", f"{PODS}?fieldValidation=Strict", body)
    assert strict.status == 400
    status = strict.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].bogus", unknown field "spec.foo"'
    )
    assert (await client.get(f"{PODS}/fv")).status == 404

    warn = await client.request("POST", f"{PODS}?fieldValidation=Warn", body)
    assert warn.status == 201
    assert "spec.foo" in warn.headers["warning"]
    assert "foo" not in warn.json()["spec"]
    assert "bogus" not in warn.json()["spec"]["containers"][0]

    default = await client.request("POST", PODS, {**pod("fv2"), "extra": True})
    assert default.status == 201
    assert default.headers["warning"] == '299 - "unknown field \\"extra\\""'

    ignore = await client.request("POST", f"{PODS}?fieldValidation=Ignore", pod("fv3", foo=1))
    assert ignore.status == 201
    assert "warning" not in ignore.headers
    assert "foo" not in ignore.json()["spec"]

    wrong = pod("fv5")
    wrong["spec"]["containers"] = "busybox"
    refused = await client.request("POST", f"{PODS}?fieldValidation=Ignore", wrong)
    assert refused.status == 400
    assert refused.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go '
        "struct field PodSpec.spec.containers of type []v1.Container"
    )

    nonsense = await client.request("POST", f"{PODS}?fieldValidation=Loose", pod("fv4"))
    assert nonsense.status == 422  # invalid CreateOptions
    assert "fieldValidation" in nonsense.json()["message"]


async def test_field_validation_duplicates_patch_update_apply(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    raw = (
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"},'
        b'"data":{"a":"1"}}'
    )
    cms = "/api/v1/namespaces/default/configmaps"
    dup = await client.request("POST", f"{cms}?fieldValidation=Strict", raw)
    assert dup.status == 400
    assert 'strict decoding error: duplicate field "metadata.name"' in dup.json()["message"]
    assert (await client.request("POST", cms, raw)).status == 201

    patch = await client.request(
        "PATCH",
        f"{cms}/dup?fieldValidation=Strict",
        {"data": {"b": "2"}, "spec": {"x": 1}},
        content_type="application/merge-patch+json",
    )
    assert patch.status == 400
    assert patch.json()["message"] == 'strict decoding error: unknown field "spec"'
    warned = await client.request(
        "PATCH",
        f"{cms}/dup",
        {"data": {"b": "2"}, "spec": {"x": 1}},
        content_type="application/strategic-merge-patch+json",
    )
    assert warned.status == 200
    assert warned.json()["data"] == {"a": "1", "b": "2"}
    assert "spec" not in warned.json()

    current = warned.json()
    update = await client.request(
        "PUT", f"{cms}/dup?fieldValidation=Strict", {**current, "stray": 1}
    )
    assert update.status == 400
    assert update.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "stray"'
    )

    applied = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "stray": 1}
    ).encode()
    ssa = await client.request(
        "PATCH",
        f"{cms}/dup?fieldManager=me",
        applied,
        content_type="application/apply-patch+yaml",
    )
    assert ssa.status == 400
    assert ssa.json()["message"] == (
        "failed to create typed patch object (/v1, Kind=ConfigMap): .stray: field not declared "
        "in schema"
    )


async def test_custom_resources_are_not_checked_here(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    """CRs are pruned against their own CRD schema elsewhere; the built-in check leaves them be."""
    await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    made = await client.request(
        "POST",
        "/apis/example.com/v1/namespaces/default/gadgets?fieldValidation=Warn",
        gadget("g", 3),
    )
    assert made.status == 201
    assert "warning" not in made.headers
    assert msgspec.json.decode(made.body)["spec"] == {"gears": {"teeth": 3}}


async def test_nonsense_crd_schema_never_breaks_publishing(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    odd = msgspec.json.decode(msgspec.json.encode(CRD))
    odd["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {
            "type": "banana",
            "required": ["nowhere"],
            "properties": {"a": {"$ref": "#/definitions/missing", "items": {"type": "object"}}},
            "additionalProperties": False,
            "default": {"deep": [1, {"x": None}]},
        }
    }
    made = await client.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", odd
    )
    # Served here today; CRD schema validation may refuse it (422). Either way, no 500.
    assert made.status in (201, 422)
    for accept in ("application/json", openapi_proto.MIME):
        assert (await client.get("/openapi/v2", headers={"Accept": accept})).status == 200
    index = (await client.get("/openapi/v3")).json()["paths"]
    for entry in index.values():
        assert (await client.get(entry["serverRelativeURL"])).status == 200
