"""A custom resource with a structural schema (widgets) installed in the emulator, and its objects
posted and their validation causes read back: the schema tests and the ratcheting tests check
the same objects."""

from __future__ import annotations

import json
from typing import Any

from kubetrio.emulator import Emulator
from tests.helpers.kube import blocking, pykube_api

WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {
            "type": "number",
            "minimum": 0,
            "exclusiveMinimum": True,
            "maximum": 1,
            "exclusiveMaximum": True,
        },
        "step": {"type": "integer", "multipleOf": 5},
        "tier": {"type": "string", "enum": ["gold", "silver"]},
        "code": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 2,
            "x-kubernetes-list-type": "set",
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
            },
        },
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "minProperties": 1,
            "maxProperties": 2,
        },
        "enabled": {"type": "boolean"},
        "note": {"type": "string", "nullable": True},
        "port": {"x-kubernetes-int-or-string": True},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}},
        },
        "mode": {"type": "string", "default": "auto"},
        "choice": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
        "level": {"type": "integer", "not": {"enum": [13]}},
        "either": {"type": "string", "anyOf": [{"pattern": "^x"}, {"maxLength": 1}]},
        "both": {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]},
    },
}


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}},
        "spec": SPEC_SCHEMA,
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string", "enum": ["Ready", "Failed"]},
                "count": {"type": "integer", "default": 0},
            },
        },
    },
}


def crd(schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def widget(name: str = "w1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 3, **spec},
    }


def pykube_kwargs(path: str) -> dict[str, str]:
    """pykube-ng's (base, version, url) for an API path."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        return {"base": "/api", "version": parts[1], "url": "/".join(parts[2:])}
    return {"base": "/apis", "version": f"{parts[1]}/{parts[2]}", "url": "/".join(parts[3:])}


async def post(emu: Emulator, path: str, body: Any, query: str = "") -> Any:
    """POST with pykube-ng's session; the raw response (status, headers, Status body)."""
    api = pykube_api(emu)
    kwargs = pykube_kwargs(path)
    kwargs["url"] += query
    return await blocking(lambda: api.post(data=json.dumps(body), **kwargs))


async def with_crd(emu: Emulator, schema: dict[str, Any] = SCHEMA) -> None:
    r = await post(emu, CRDS, crd(schema))
    assert r.status_code == 201, r.text


def causes(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


MERGE = "application/merge-patch+json"
