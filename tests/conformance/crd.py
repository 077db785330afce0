"""The corpus's custom resource: Widget (conformance.kubetrio.io/v1), with defaults, an
int-or-string, enum, pattern and length limits, CEL rules (one a transition rule), a field
that keeps unknown fields, printer columns and the status and scale subresources."""

from __future__ import annotations

from typing import Any

GROUP = "conformance.kubetrio.io"
PLURAL = "widgets"
NAME = f"{PLURAL}.{GROUP}"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/$ns/{PLURAL}"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.low) || !has(self.high) || self.low <= self.high",
                    "message": "low must not exceed high",
                }
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 100, "default": 1},
                "color": {"type": "string", "enum": ["red", "green", "blue"]},
                "port": {"x-kubernetes-int-or-string": True},
                "label": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "replicas": {"type": "integer", "minimum": 0},
                "low": {"type": "integer"},
                "high": {"type": "integer"},
                "frozen": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "frozen is immutable"}
                    ],
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"mode": {"type": "string", "default": "auto"}},
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
                "phase": {"type": "string"},
            },
        },
    },
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": PLURAL,
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
            "shortNames": ["wg"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": SCHEMA},
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                ],
            }
        ],
    },
}


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }
