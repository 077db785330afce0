"""A CRD conversion webhook served by the manager (``manager.webhook(Kind).converter(...)``) and
called by the API server itself, on the emulator and on a real kube-apiserver: an object
written in v2 is stored in v1 and read back in both, a list in v2 is converted, and a
converter's refusal fails the read with its message. The project's own CRDs serve one version
each, so this is the framework's feature as a user with two versions would use it."""

from __future__ import annotations

import base64
import copy
from typing import Any, ClassVar

import msgspec
import pytest

from kubetrio.api.meta import KubeObject
from kubetrio.api.registry import KindInfo
from kubetrio.runtime import ApiError, Manager
from kubetrio.testing import install_crds, run_manager
from kubetrio.testing.servers import ApiServer

GROUP = "conversion.kubetrio.io"
CRD_NAME = f"widgets.{GROUP}"


class WidgetV1(KubeObject, kw_only=True):
    """The kind the converter is registered through (its storage version)."""

    KIND: ClassVar[KindInfo] = KindInfo(f"{GROUP}/v1", "Widget", "widgets", True)


def convert(obj: dict[str, Any], to_api_version: str) -> dict[str, Any]:
    """v1 ``spec.size`` <-> v2 ``spec.dimensions.size``; a size of 13 cannot be converted."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    size = spec.get("size") if "size" in spec else (spec.get("dimensions") or {}).get("size")
    if size == 13:
        raise ValueError("spec.size: 13 cannot be converted")
    out["spec"] = (
        {"size": size} if to_api_version.endswith("/v1") else {"dimensions": {"size": size}}
    )
    out["apiVersion"] = to_api_version
    return out


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": spec}},
        }
    }


def crd(url: str, ca_pem: bytes) -> dict[str, Any]:
    size = {"size": {"type": "integer"}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": _schema(size)},
                {
                    "name": "v2",
                    "served": True,
                    "storage": False,
                    "schema": _schema({"dimensions": {"type": "object", "properties": size}}),
                },
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": url,
                        "caBundle": base64.b64encode(ca_pem).decode(),
                    },
                },
            },
        },
    }


def _register(manager: Manager, _config: object) -> None:
    manager.webhook(WidgetV1).converter(convert)


def widget(version: str, name: str, size: int) -> dict[str, Any]:
    spec = {"size": size} if version == "v1" else {"dimensions": {"size": size}}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


async def test_the_server_converts_through_the_managers_webhook(api_server: ApiServer) -> None:
    client, namespace = api_server.client(), api_server.namespace

    def path(version: str, name: str = "") -> str:
        return f"/apis/{GROUP}/{version}/namespaces/{namespace}/widgets" + (
            f"/{name}" if name else ""
        )

    async def call(method: str, url: str, body: Any = None) -> dict[str, Any]:
        data = msgspec.json.encode(body) if body is not None else None
        answer: dict[str, Any] = msgspec.json.decode(await client.request(method, url, body=data))
        return answer

    async with run_manager(api_server, _register, webhook_bind_address="127.0.0.1:0") as manager:
        ca = manager.webhooks.ca_pem
        assert ca is not None
        url = f"https://127.0.0.1:{manager.bound_ports['webhook']}/convert"
        await install_crds(client, crd(url, ca))
        try:
            created = await call("POST", path("v2"), widget("v2", "two", 2))
            assert created["apiVersion"] == f"{GROUP}/v2"
            assert created["spec"] == {"dimensions": {"size": 2}}
            # Stored in v1 (the storage version): read back in v1, converted by the webhook.
            assert (await call("GET", path("v1", "two")))["spec"] == {"size": 2}
            await call("POST", path("v1"), widget("v1", "one", 1))
            listed = await call("GET", path("v2"))
            assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == [
                ("one", {"dimensions": {"size": 1}}),
                ("two", {"dimensions": {"size": 2}}),
            ]
            # Stored as written in v1; the converter refuses it in v2, so the read fails.
            await call("POST", path("v1"), widget("v1", "bad", 13))
            with pytest.raises(ApiError) as refused:
                await call("GET", path("v2", "bad"))
            assert refused.value.status == 500, refused.value
            assert "spec.size: 13 cannot be converted" in refused.value.message
        finally:
            await client.request(
                "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
            )
