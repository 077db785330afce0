"""A custom resource (the Widget CRD, ``crd.py``) and CustomResourceDefinitions themselves:
schema validation, defaults, int-or-string, CEL rules, pruning, status and scale."""

from __future__ import annotations

import json
from typing import Any

from ..crd import NAME, WIDGETS, widget
from ..runner import STRATEGIC, Req, probe
from .objects import apply, delete, get, jsonpatch, merge, post, put, setup

W = f"{WIDGETS}/w"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crp(id: str, *steps: Any) -> Any:
    return probe(id, *steps, crd=True)


def gadget_crd(
    schema: dict[str, Any], name: str = "gadgets", group: str = "$ns.example.com"
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": name, "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def spec_and_generation(body: Any) -> Any:
    if not isinstance(body, dict) or "spec" not in body:
        return body
    return {
        "generation": body["metadata"].get("generation"),
        "spec": body.get("spec"),
        "status": body.get("status"),
    }


def sorted_causes(body: Any) -> Any:
    """A Status with its causes sorted and its message (which lists them) left out."""
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return body
    details = dict(body.get("details") or {})
    details["causes"] = sorted(
        details.get("causes") or [], key=lambda c: json.dumps(c, sort_keys=True)
    )
    return {**{k: v for k, v in body.items() if k != "message"}, "details": details}


PROBES = [
    crp("widget.create-defaults", post(WIDGETS, widget("w", color="red"))),
    crp("widget.get", setup(post(WIDGETS, widget("w"))), get(W)),
    crp(
        "widget.prune-unknown",
        post(WIDGETS, {**widget("w", color="red", extra="dropped"), "top": 1}),
    ),
    crp(
        "widget.prune-unknown-strict",
        post(f"{WIDGETS}?fieldValidation=Strict", {**widget("w", extra=1), "top": 1}),
    ),
    crp("widget.keep-unknown-fields", post(WIDGETS, widget("w", free={"any": {"thing": [1]}}))),
    crp("widget.bad-enum", post(WIDGETS, widget("w", color="purple"))),
    crp("widget.above-maximum", post(WIDGETS, widget("w", size=101))),
    crp("widget.below-minimum", post(WIDGETS, widget("w", size=-1))),
    crp("widget.wrong-type", post(WIDGETS, widget("w", size="big"))),
    crp("widget.pattern-and-length", post(WIDGETS, widget("w", label="ABCDEFGHIJKL"))),
    crp(
        "widget.several-errors",
        # A cluster reports schema errors in Go map order (it varies): compared sorted.
        post(WIDGETS, widget("w", size=1000, color="pink", label="X"), view=sorted_causes),
    ),
    crp("widget.int-or-string-int", post(WIDGETS, widget("w", port=80))),
    crp("widget.int-or-string-string", post(WIDGETS, widget("w", port="http"))),
    crp("widget.int-or-string-bool", post(WIDGETS, widget("w", port=True))),
    crp("widget.list-set-duplicates", post(WIDGETS, widget("w", tags=["a", "a"]))),
    crp("widget.cel-rule", post(WIDGETS, widget("w", low=5, high=1))),
    crp(
        "widget.cel-transition-rule",
        setup(post(WIDGETS, widget("w", frozen="ice"))),
        merge(W, {"spec": {"frozen": "water"}}),
        merge(W, {"spec": {"size": 3}}),
    ),
    crp(
        "widget.status-dropped-on-create",
        post(WIDGETS, {**widget("w"), "status": {"phase": "Ready", "replicas": 2}}),
    ),
    crp(
        "widget.status-subresource",
        setup(post(WIDGETS, widget("w"))),
        merge(f"{W}/status", {"spec": {"size": 9}, "status": {"phase": "Ready"}}),
        get(W, view=spec_and_generation),
    ),
    crp(
        "widget.main-ignores-status",
        setup(post(WIDGETS, widget("w"))),
        merge(W, {"status": {"phase": "Ready"}}, view=spec_and_generation),
    ),
    crp(
        "widget.generation",
        setup(post(WIDGETS, widget("w"))),
        merge(W, {"spec": {"size": 2}}, view=spec_and_generation),
        merge(W, {"metadata": {"labels": {"a": "b"}}}, view=spec_and_generation),
        merge(f"{W}/status", {"status": {"phase": "x"}}, view=spec_and_generation),
    ),
    crp(
        "widget.scale",
        setup(post(WIDGETS, widget("w", replicas=2))),
        setup(merge(f"{W}/status", {"status": {"replicas": 1, "selector": "app=w"}})),
        get(f"{W}/scale"),
        merge(f"{W}/scale", {"spec": {"replicas": 5}}),
        get(W, view=spec_and_generation),
    ),
    crp(
        "widget.scale-negative",
        setup(post(WIDGETS, widget("w", replicas=2))),
        merge(f"{W}/scale", {"spec": {"replicas": -3}}),
    ),
    crp(
        "widget.merge-patch",
        setup(post(WIDGETS, widget("w", tags=["a"]))),
        merge(W, {"spec": {"tags": ["b"], "color": "blue"}}),
    ),
    crp(
        "widget.json-patch",
        setup(post(WIDGETS, widget("w"))),
        jsonpatch(W, [{"op": "add", "path": "/spec/color", "value": "green"}]),
    ),
    crp(
        "widget.strategic-patch-unsupported",
        setup(post(WIDGETS, widget("w"))),
        Req("PATCH", W, {"spec": {"color": "red"}}, ctype=STRATEGIC),
    ),
    crp(
        "widget.apply",
        apply(W, widget("w", color="red")),
        apply(W, widget("w", color="blue", size=3)),
    ),
    crp(
        "widget.update-invalid",
        setup(post(WIDGETS, widget("w"))),
        put(W, widget("w", size=500)),
    ),
    crp(
        "widget.wrong-kind",
        post(WIDGETS, {**widget("w"), "kind": "Gadget"}),
    ),
    crp("widget.no-api-version", post(WIDGETS, {"kind": "Widget", "metadata": {"name": "w"}})),
    crp("widget.delete", setup(post(WIDGETS, widget("w"))), delete(W), get(W)),
    crp(
        "widget.list",
        setup(post(WIDGETS, widget("a"))),
        setup(post(WIDGETS, widget("b"))),
        get(WIDGETS),
    ),
    crp(
        "widget.short-name-discovery",
        get("/apis/conformance.kubetrio.io/v1"),
    ),
    crp("crd.get", get(f"{CRDS}/{NAME}")),
    # -- CustomResourceDefinitions
    probe("crd.bad-schema-type", post(CRDS, gadget_crd({"type": "thing"}))),
    probe(
        "crd.name-mismatch",
        post(CRDS, {**gadget_crd({"type": "object"}), "metadata": {"name": "wrong.example.com"}}),
    ),
    probe(
        "crd.non-structural",
        post(
            CRDS,
            gadget_crd(
                {
                    "type": "object",
                    "properties": {"spec": {"properties": {"a": {"type": "string"}}}},
                }
            ),
        ),
    ),
    probe(
        "crd.cel-does-not-compile",
        post(
            CRDS,
            gadget_crd(
                {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {"size": {"type": "integer"}},
                            "x-kubernetes-validations": [{"rule": "self.size + 'a' == 'b'"}],
                        }
                    },
                }
            ),
        ),
    ),
    probe(
        "crd.cel-syntax-error",
        post(
            CRDS,
            gadget_crd(
                {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.spec.size >"}],
                    "properties": {"spec": {"type": "object"}},
                }
            ),
        ),
    ),
    probe(
        "crd.no-storage-version",
        post(
            CRDS,
            {
                **gadget_crd({"type": "object"}),
                "spec": {
                    **gadget_crd({"type": "object"})["spec"],
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": False,
                            "schema": {"openAPIV3Schema": {"type": "object"}},
                        }
                    ],
                },
            },
        ),
    ),
    probe(
        "crd.create-and-delete",
        post(
            CRDS,
            gadget_crd({"type": "object", "properties": {"spec": {"type": "object"}}}),
            view=lambda b: {k: b.get(k) for k in ("kind", "spec", "code", "reason", "message")},
        ),
        delete(
            f"{CRDS}/gadgets.$ns.example.com",
            view=lambda b: {k: b.get(k) for k in ("kind", "code", "reason", "message")},
        ),
    ),
]
