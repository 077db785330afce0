"""Custom resource definitions more than one emulator test installs: a CRD with a schema for field
validation and the Machine CRD the API rules run against."""

from __future__ import annotations

from typing import Any

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "A Gadget is a small mechanical device.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "description": "What the gadget should be.",
                                "properties": {
                                    "gears": {
                                        "type": "object",
                                        "description": "The gear train of the gadget.",
                                        "properties": {
                                            "teeth": {
                                                "type": "integer",
                                                "description": "Teeth on the largest gear.",
                                            }
                                        },
                                    },
                                    "colour": {"type": "string"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


MACHINE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "machines.machine.sapcloud.io"},
    "spec": {
        "group": "machine.sapcloud.io",
        "scope": "Namespaced",
        "names": {
            "plural": "machines",
            "singular": "machine",
            "kind": "Machine",
            "shortNames": ["mach"],
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                # apiextensions.k8s.io/v1 requires a schema; this one keeps every field.
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
