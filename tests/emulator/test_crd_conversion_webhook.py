"""A two-version CRD converted by its conversion webhook: objects kept in the storage version,
read, written and watched in either version, the objects of a list converted in one review."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
import trio
import trio.testing
import yaml

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.util.inflight import request_in_flight, waiting_on_simulated_time
from tests.helpers.kube import Kubectl
from tests.helpers.webhook_server import HeldClient, WebhookServer, serve_webhook


@pytest.fixture
def client(emu: Emulator) -> EmuClient:
    """Requests that hold the mock clock (see HeldClient)."""
    return HeldClient(emu.url, emu.token)


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": spec}},
        }
    }


V1 = _schema({"size": {"type": "integer"}})
V2 = _schema({"dimensions": {"type": "object", "properties": {"size": {"type": "integer"}}}})


def crd(server: WebhookServer) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": V1},
                {"name": "v2", "served": True, "storage": False, "schema": V2},
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": server.config("/convert"),
                },
            },
        },
    }


def _convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if desired.endswith("/v2"):
        out["spec"] = {"dimensions": {"size": spec.get("size")}}
    else:
        out["spec"] = {"size": (spec.get("dimensions") or {}).get("size")}
    out["apiVersion"] = desired
    return out


async def converter(request: dict[str, Any]) -> dict[str, Any]:
    desired = request["desiredAPIVersion"]
    return {
        "convertedObjects": [_convert(o, desired) for o in request["objects"]],
        "result": {"status": "Success"},
    }


def widget(version: str, name: str, size: int) -> dict[str, Any]:
    spec = {"size": size} if version == "v1" else {"dimensions": {"size": size}}
    return {
        "apiVersion": f"example.com/{version}",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def run(kubectl: Kubectl, *args: str, docs: list[dict[str, Any]] | None = None) -> Any:
    stdin = yaml.safe_dump_all(docs).encode() if docs is not None else None
    with request_in_flight():
        return await kubectl.run(*args, check=False, stdin=stdin)


@pytest.mark.slow
@pytest.mark.kubectl
async def test_objects_are_served_in_both_versions_through_the_webhook(
    emu: Emulator, kubectl: Kubectl, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_webhook(converter) as server:
        assert (await run(kubectl, "apply", "-f", "-", docs=[crd(server)])).returncode == 0
        # written in v1, read as v2
        p = await run(kubectl, "apply", "-f", "-", docs=[widget("v1", "one", 1)])
        assert p.returncode == 0, p.stderr
        p = await run(kubectl, "get", "widgets.v2.example.com", "one", "-o", "json")
        assert p.returncode == 0, p.stderr
        got = yaml.safe_load(p.stdout)
        assert got["apiVersion"] == "example.com/v2"
        assert got["spec"] == {"dimensions": {"size": 1}}
        # written in v2: stored in v1, read back in both
        p = await run(kubectl, "apply", "-f", "-", docs=[widget("v2", "two", 2)])
        assert p.returncode == 0, p.stderr
        rt = emu.types.by_key("widgets.example.com")
        assert rt is not None
        stored = emu.store.get(rt, "default", "two").obj
        assert stored["apiVersion"] == "example.com/v1" and stored["spec"] == {"size": 2}
        p = await run(kubectl, "get", "widgets.v1.example.com", "two", "-o", "json")
        assert yaml.safe_load(p.stdout)["spec"] == {"size": 2}
        # a list in v2: both objects converted in one review
        before = len(server.reviews)
        r = await client.get("/apis/example.com/v2/namespaces/default/widgets")
        assert [i["spec"]["dimensions"]["size"] for i in r.json()["items"]] == [1, 2]
        assert len(server.reviews) == before + 1
        assert len(server.reviews[-1]["request"]["objects"]) == 2
        review = server.reviews[-1]
        assert review["apiVersion"] == "apiextensions.k8s.io/v1"
        assert review["kind"] == "ConversionReview"
        # kubectl get in v2 (a table) works too
        p = await run(kubectl, "get", "widgets.v2.example.com")
        assert p.returncode == 0 and "one" in p.stdout.decode() and "two" in p.stdout.decode()


async def test_a_watch_in_the_other_version_receives_converted_events(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_webhook(converter) as server:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert (await client.request("POST", path, crd(server))).status == 201
        widgets = "/apis/example.com/v1/namespaces/default/widgets"
        assert (await client.request("POST", widgets, widget("v1", "w", 3))).status == 201
        async with client.watch("/apis/example.com/v2/namespaces/default/widgets?watch=1") as w:
            added = await w.next()
            assert added is not None and added["type"] == "ADDED"
            assert added["object"]["apiVersion"] == "example.com/v2"
            assert added["object"]["spec"] == {"dimensions": {"size": 3}}
            patch = {"spec": {"size": 4}}
            r = await client.request(
                "PATCH", widgets + "/w", patch, content_type="application/merge-patch+json"
            )
            assert r.status == 200, r.body
            modified = await w.next()
            assert modified is not None and modified["type"] == "MODIFIED"
            assert modified["object"]["spec"] == {"dimensions": {"size": 4}}


async def test_a_watch_converts_only_the_objects_it_shows(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    """A namespace's watch (or a selector's) filters before it converts, as kube-apiserver's
    watch does: an object it would not show, whose conversion fails, does not end it."""

    async def all_but_poison(request: dict[str, Any]) -> dict[str, Any]:
        if any(o["metadata"]["name"] == "poison" for o in request["objects"]):
            return {"convertedObjects": [], "result": {"status": "Failure", "message": "no"}}
        return await converter(request)

    async with serve_webhook(all_but_poison) as server:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert (await client.request("POST", path, crd(server))).status == 201
        other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
        assert (await client.request("POST", "/api/v1/namespaces", other)).status == 201
        async with client.watch("/apis/example.com/v2/namespaces/default/widgets?watch=1") as w:
            poison = {**widget("v1", "poison", 1), "metadata": {"name": "poison"}}
            r = await client.request(
                "POST", "/apis/example.com/v1/namespaces/other/widgets", poison
            )
            assert r.status == 201, r.body
            widgets = "/apis/example.com/v1/namespaces/default/widgets"
            assert (await client.request("POST", widgets, widget("v1", "w", 3))).status == 201
            added = await w.next()
            assert added is not None and added["type"] == "ADDED", added
            assert added["object"]["spec"] == {"dimensions": {"size": 3}}


@pytest.mark.kubectl
async def test_a_failing_conversion_webhook_fails_the_read_as_kube_words_it(
    emu: Emulator, kubectl: Kubectl, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async def refuse(request: dict[str, Any]) -> dict[str, Any]:
        return {"convertedObjects": [], "result": {"status": "Failure", "message": "no way"}}

    async with serve_webhook(refuse) as server:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert (await client.request("POST", path, crd(server))).status == 201
        widgets = "/apis/example.com/v1/namespaces/default/widgets"
        assert (await client.request("POST", widgets, widget("v1", "w", 3))).status == 201
        p = await run(kubectl, "get", "widgets.v2.example.com", "w")
        assert p.returncode == 1
        assert (
            "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget "
            "failed: no way"
        ) in p.stderr.decode()
        # reads in the storage version need no webhook
        assert (await run(kubectl, "get", "widgets.v1.example.com", "w")).returncode == 0


async def test_an_unusable_conversion_is_refused_naming_the_field(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    server = WebhookServer("https://127.0.0.1:1", "", converter)
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    bad = crd(server)
    bad["spec"]["conversion"] = {"strategy": "Webhook"}
    r = await client.request("POST", path, bad)
    assert r.status == 422, r.body
    assert r.json()["message"].endswith(
        "spec.conversion.webhook: Required value: required when strategy is set to Webhook"
    )
    bad["spec"]["conversion"]["webhook"] = {
        "conversionReviewVersions": ["v1beta1"],
        "clientConfig": {"service": {"namespace": "default", "name": "conv"}},
    }
    message = (await client.request("POST", path, bad)).json()["message"]
    assert "spec.conversion.webhook.conversionReviewVersions: Required value" in message
    assert "cannot reach in-cluster services" in message


async def test_match_policy_equivalent_sends_the_object_in_the_rules_version(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async def stamp(request: dict[str, Any]) -> dict[str, Any]:
        # a JSON patch written against v1 (the rule's version), applied to a v2 write
        ops = [
            {"op": "replace", "path": "/spec/size", "value": request["object"]["spec"]["size"] * 10}
        ]
        raw = base64.b64encode(json.dumps(ops).encode()).decode()
        return {"allowed": True, "patchType": "JSONPatch", "patch": raw}

    async with serve_webhook(converter) as conv, serve_webhook(stamp) as hook:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert (await client.request("POST", path, crd(conv))).status == 201
        rule = {
            "operations": ["CREATE"],
            "apiGroups": ["example.com"],
            "apiVersions": ["v1"],
            "resources": ["widgets"],
        }
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "tens"},
            "webhooks": [
                {
                    "name": "tens.example.com",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "clientConfig": hook.config(),
                    "rules": [rule],
                }
            ],
        }
        configs = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
        assert (await client.request("POST", configs, config)).status == 201
        v2 = "/apis/example.com/v2/namespaces/default/widgets"
        r = await client.request("POST", v2, widget("v2", "eq", 4))
        assert r.status == 201, r.body
        assert r.json()["spec"] == {"dimensions": {"size": 40}}
        request = hook.reviews[-1]["request"]
        assert request["kind"]["version"] == "v1" and request["requestKind"]["version"] == "v2"
        assert request["resource"]["version"] == "v1"
        assert request["object"]["apiVersion"] == "example.com/v1"
        assert request["object"]["spec"] == {"size": 4}
        # Exact: a v2 write no longer matches a v1 rule
        config["webhooks"][0]["matchPolicy"] = "Exact"
        r = await client.get(configs + "/tens")
        config["metadata"] = r.json()["metadata"]
        assert (await client.request("PUT", configs + "/tens", config)).status == 200
        r = await client.request("POST", v2, widget("v2", "exact", 5))
        assert r.json()["spec"] == {"dimensions": {"size": 5}}
        assert len(hook.reviews) == 1


async def test_a_hanging_conversion_webhook_times_out_after_30s_on_the_mock_clock(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async def hang(request: dict[str, Any]) -> dict[str, Any]:
        with waiting_on_simulated_time():  # this server answers by sleeping on the clock
            await trio.sleep(3600)
        return await converter(request)

    async with serve_webhook(hang) as server:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        assert (await client.request("POST", path, crd(server))).status == 201
        widgets = "/apis/example.com/v1/namespaces/default/widgets"
        assert (await client.request("POST", widgets, widget("v1", "w", 3))).status == 201
        start = trio.current_time()
        r = await client.get("/apis/example.com/v2/namespaces/default/widgets/w")
        waited = trio.current_time() - start
        assert r.status == 500, r.body
        assert r.json()["message"] == (
            "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget failed: "
            f'failed to call webhook: Post "{server.url}/convert?timeout=30s": context deadline '
            "exceeded"
        )
        assert 30 <= waited < 60
