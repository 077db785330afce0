"""Server-side apply's field ownership: managedFields left by creates, updates and applies,
conflicts between managers and forcing them, fields an applier drops, list items merged by
their keys, the status subresource's own managers, and clients that send managedFields."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..crd import WIDGETS, widget
from ..runner import Probe, Req, probe
from .objects import (
    CMS,
    DEPLOYMENTS,
    PODS,
    SERVICES,
    apply,
    cm,
    container,
    deployment,
    get,
    merge,
    pod,
    post,
    put,
    service,
    setup,
)

CM = f"{CMS}/c"
D = f"{DEPLOYMENTS}/d"
W = f"{WIDGETS}/w"


def owned(probe_id: str, *steps: Req, crd: bool = False) -> Probe:
    """A probe that compares managedFields too, in an order both servers agree on."""
    steps = tuple(s if s.view is not None else replace(s, view=by_manager) for s in steps)
    return probe(probe_id, *steps, managed_fields=True, crd=crd)


def _sorted_entries(entries: list[Any]) -> list[Any]:
    return sorted(entries, key=lambda e: (e["operation"], e["manager"], e.get("subresource", "")))


def by_manager(body: Any) -> Any:
    """managedFields sorted by operation and manager: the apiserver orders entries by their
    time, to the second, so two servers order the entries of one second differently."""
    md = body.get("metadata") if isinstance(body, dict) else None
    if isinstance(md, dict) and isinstance(md.get("managedFields"), list):
        md["managedFields"] = _sorted_entries(md["managedFields"])
    return body


def ours(body: Any) -> Any:
    """The managedFields entries of the probe's own managers (a cluster's controllers add
    theirs to workloads) with the containers: what ownership probes of Deployments show."""
    if not isinstance(body, dict) or body.get("kind") != "Deployment":
        return body
    entries = body["metadata"].get("managedFields") or []
    mine = _sorted_entries([e for e in entries if not e["manager"].startswith("kube-")])
    spec = body["spec"]
    return {"managedFields": mine, "containers": spec["template"]["spec"]["containers"]}


def causes(body: Any) -> Any:
    """A conflict's causes in a stable order (the apiserver lists them as it meets them)."""
    if isinstance(body, dict) and isinstance(body.get("details"), dict):
        found = body["details"].get("causes") or []
        body["details"]["causes"] = sorted(found, key=lambda c: (c["field"], c["message"]))
    return body


def entries(body: Any) -> Any:
    """The managedFields alone."""
    return by_manager(body)["metadata"].get("managedFields") if "metadata" in body else body


def app(name: str, *containers: dict[str, Any], replicas: int | None = None) -> dict[str, Any]:
    """A Deployment configuration with the given containers (and replicas when named)."""
    body = deployment(name, replicas=replicas)
    body["spec"]["template"]["spec"]["containers"] = list(containers)
    return body


PROBES = [
    owned("ssa.apply-creates-with-an-apply-entry", apply(CM, cm("c", labels={"x": "y"}))),
    owned(
        "ssa.create-and-patch-record-update-entries",
        post(CMS, cm("c", labels={"x": "y"})),
        merge(f"{CM}?fieldManager=editor", {"data": {"b": "2"}}),
        merge(f"{CM}?fieldManager=editor", {"data": {"b": "3"}, "metadata": {"labels": None}}),
    ),
    owned(
        "ssa.conflict-between-appliers",
        setup(apply(CM, cm("c", {"a": "1", "b": "1"}), manager="first")),
        apply(CM, cm("c", {"a": "2"}), manager="second"),
        apply(CM, cm("c", {"a": "2", "b": "2"}), manager="second"),
        get(CM),
    ),
    owned(
        "ssa.conflicts-with-two-managers",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        setup(
            merge(
                f"{CM}?fieldManager=editor",
                {"data": {"b": "1"}, "metadata": {"labels": {"l": "1"}}},
            )
        ),
        apply(CM, cm("c", {"a": "2", "b": "2"}, labels={"l": "2"}), manager="second", view=causes),
    ),
    owned(
        "ssa.force-takes-ownership",
        setup(apply(CM, cm("c", {"a": "1", "b": "1"}), manager="first")),
        apply(CM, cm("c", {"a": "2"}), manager="second", force=True),
        apply(CM, cm("c", {"b": "1"}), manager="first"),
    ),
    owned(
        "ssa.same-value-is-shared",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        apply(CM, cm("c", {"a": "1"}), manager="second"),
        apply(CM, cm("c", {}), manager="first"),
        apply(CM, cm("c", {}), manager="second"),
    ),
    owned(
        "ssa.dropped-fields-are-removed",
        setup(apply(CM, cm("c", {"a": "1", "b": "2"}, labels={"x": "y"}))),
        apply(CM, cm("c", {"a": "1"})),
        apply(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    ),
    owned(
        "ssa.update-takes-fields-from-applier",
        setup(apply(CM, cm("c", {"a": "1", "b": "1"}), manager="first")),
        merge(f"{CM}?fieldManager=editor", {"data": {"a": "9"}}),
        apply(CM, cm("c", {"a": "1", "b": "1"}), manager="first"),
        apply(CM, cm("c", {"b": "1"}), manager="first"),
    ),
    owned(
        "ssa.update-then-apply-by-one-name",
        setup(post(f"{CMS}?fieldManager=tool", cm("c", {"a": "1"}))),
        apply(CM, cm("c", {"a": "2"}), manager="tool"),
        apply(CM, cm("c", {"a": "1", "b": "1"}), manager="tool"),
        merge(f"{CM}?fieldManager=tool", {"data": {"b": "5"}}),
    ),
    owned(
        "ssa.list-map-items-merge-by-key",
        apply(D, app("d", container("a")), manager="first", view=ours),
        apply(D, app("d", container("b", image="nginx")), manager="second", view=ours),
        apply(D, app("d", container("a", image="nginx")), manager="second", view=ours),
    ),
    owned(
        "ssa.list-map-item-dropped",
        apply(D, app("d", container("a"), container("b")), view=ours),
        apply(D, app("d", container("a")), view=ours),
    ),
    owned(
        "ssa.list-map-nested-ports",
        apply(
            D,
            app("d", container("a", ports=[{"containerPort": 80}, {"containerPort": 81}])),
            view=ours,
        ),
        apply(D, app("d", container("a", ports=[{"containerPort": 81}])), view=ours),
    ),
    owned(
        "ssa.set-list-merges-values",
        apply(W, widget("w", tags=["a", "b"]), manager="first"),
        apply(W, widget("w", tags=["c"]), manager="second"),
        apply(W, widget("w", tags=["b"]), manager="first"),
        crd=True,
    ),
    owned(
        "ssa.atomic-list-conflicts-whole",
        apply(D, app("d", container("a", args=["x", "y"])), manager="first", view=ours),
        apply(D, app("d", container("a", args=["x", "z"])), manager="second", view=causes),
        apply(D, app("d", container("a", args=["x", "y"])), manager="second", view=ours),
    ),
    owned(
        "ssa.duplicate-list-map-keys",
        apply(D, app("d", container("a"), container("a", image="nginx"))),
    ),
    owned(
        "ssa.atomic-map-conflicts-whole",
        apply(D, app("d", container("a")), manager="first", view=ours),
        apply(
            D,
            {**app("d", container("a")), "spec": {"selector": {"matchLabels": {"other": "x"}}}},
            manager="second",
            view=causes,
        ),
    ),
    owned(
        "ssa.custom-resource-dropped-nested-fields",
        apply(
            W,
            {
                **widget("w", free={"x": {"y": 1}, "z": 2}),
                "metadata": {"name": "w", "labels": {"l": "1"}},
            },
        ),
        apply(W, widget("w", free={"z": 2})),
        apply(W, widget("w")),
        crd=True,
    ),
    owned(
        "ssa.status-has-its-own-managers",
        setup(apply(W, widget("w", size=2), manager="spec-owner")),
        apply(
            f"{W}/status",
            {**widget("w"), "status": {"phase": "Ready", "replicas": 1}},
            manager="status-owner",
        ),
        merge(f"{W}/status?fieldManager=status-editor", {"status": {"phase": "Done"}}),
        apply(f"{W}/status", {**widget("w"), "status": {"phase": "Ready"}}, manager="status-owner"),
        get(W),
        crd=True,
    ),
    owned(
        "ssa.service-create-entry",
        post(SERVICES, service("s", {"port": 80})),
    ),
    owned(
        "ssa.pod-create-entry",
        post(PODS, pod("p", container("c", ports=[{"containerPort": 80}])), view=entries),
    ),
    owned(
        "ssa.deployment-create-update-entry",
        post(DEPLOYMENTS, deployment("d")),
        merge(f"{D}?fieldManager=editor", {"spec": {"replicas": 2, "paused": True}}, view=ours),
    ),
    owned(
        "ssa.scale-of-a-custom-resource",
        setup(apply(W, widget("w", replicas=1), manager="spec-owner")),
        merge(f"{W}/scale?fieldManager=scaler", {"spec": {"replicas": 2}}),
        get(W),
        crd=True,
    ),
    owned(
        "ssa.custom-resource-update-entries",
        post(WIDGETS, widget("w", size=2, nested={"mode": "x"})),
        merge(f"{W}?fieldManager=editor", {"spec": {"color": "red"}}),
        crd=True,
    ),
    owned(
        "ssa.main-apply-leaves-status-alone",
        apply(W, {**widget("w", size=2), "status": {"phase": "Ready"}}),
        apply(f"{W}/status", {**widget("w", size=5), "status": {"phase": "Done"}}, manager="st"),
        crd=True,
    ),
    owned(
        "ssa.status-apply-to-missing-object",
        apply(f"{W}/status", {**widget("w"), "status": {"phase": "Ready"}}),
        crd=True,
    ),
    owned(
        "ssa.reset-managed-fields",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        merge(f"{CM}?fieldManager=editor", {"metadata": {"managedFields": []}}),
        merge(f"{CM}?fieldManager=editor", {"data": {"b": "1"}}),
        apply(CM, cm("c", {"a": "2"}), manager="first"),
    ),
    owned(
        "ssa.put-without-managed-fields-keeps-them",
        setup(apply(CM, cm("c", {"a": "1", "b": "1"}), manager="first")),
        put(f"{CM}?fieldManager=editor", cm("c", {"a": "1", "c": "1"})),
        apply(CM, cm("c", {"a": "1", "b": "2"}), manager="first"),
    ),
    owned(
        "ssa.bad-managed-fields-are-ignored",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        merge(
            f"{CM}?fieldManager=editor",
            {"metadata": {"managedFields": [{"manager": "x", "operation": "Bogus"}]}},
        ),
    ),
    owned(
        "ssa.managed-fields-replaced-by-client",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        merge(
            f"{CM}?fieldManager=editor",
            {
                "metadata": {
                    "managedFields": [
                        {
                            "manager": "someone",
                            "operation": "Apply",
                            "apiVersion": "v1",
                            "fieldsType": "FieldsV1",
                            "fieldsV1": {"f:data": {"f:a": {}}},
                        }
                    ]
                }
            },
        ),
        apply(CM, cm("c", {"a": "2"}), manager="first"),
    ),
    owned(
        "ssa.applied-managed-fields-refused",
        apply(CM, {**cm("c"), "metadata": {"name": "c", "managedFields": []}}),
    ),
    owned(
        "ssa.dry-run-apply-changes-nothing",
        setup(apply(CM, cm("c", {"a": "1"}), manager="first")),
        apply(f"{CM}?dryRun=All", cm("c", {"a": "2"}), manager="first"),
        get(CM),
    ),
]
