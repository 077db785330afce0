"""Deployments, ReplicaSets and StatefulSets: defaults, validation, generation, the scale
subresource."""

from __future__ import annotations

from typing import Any

from ..runner import probe
from .objects import (
    DEPLOYMENTS,
    REPLICASETS,
    STATEFULSETS,
    deployment,
    get,
    merge,
    post,
    put,
    replicaset,
    setup,
    statefulset,
    template,
)

D = f"{DEPLOYMENTS}/d"
SCALE = f"{D}/scale"


def scale(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name, "namespace": "$ns"},
        "spec": {"replicas": replicas},
    }


def generation(body: Any) -> Any:
    md = body.get("metadata", {}) if isinstance(body, dict) else {}
    return {"generation": md.get("generation"), "replicas": body.get("spec", {}).get("replicas")}


PROBES = [
    # -- Deployment
    probe("deployment.create", post(DEPLOYMENTS, deployment("d"))),
    probe("deployment.create-no-replicas", post(DEPLOYMENTS, deployment("d", replicas=None))),
    probe(
        "deployment.selector-mismatch",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {"matchLabels": {"app": "a"}},
                    "template": template({"app": "b"}),
                },
            },
        ),
    ),
    probe("deployment.replicas-negative", post(DEPLOYMENTS, deployment("d", replicas=-1))),
    probe(
        "deployment.no-selector",
        post(DEPLOYMENTS, {**deployment("d"), "spec": {"template": template({"app": "d"})}}),
    ),
    probe(
        "deployment.empty-selector",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {},
                    "template": template({"app": "d"}),
                },
            },
        ),
    ),
    probe(
        "deployment.bad-strategy",
        post(DEPLOYMENTS, deployment("d", strategy={"type": "Sometimes"})),
    ),
    probe(
        "deployment.recreate-with-rolling-params",
        post(
            DEPLOYMENTS,
            deployment("d", strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
        ),
    ),
    probe(
        "deployment.max-unavailable-percent",
        post(
            DEPLOYMENTS,
            deployment("d", strategy={"rollingUpdate": {"maxUnavailable": "150%"}}),
        ),
    ),
    probe(
        "deployment.selector-immutable",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(
            D,
            {
                "spec": {
                    "selector": {"matchLabels": {"app": "d", "x": "y"}},
                    "template": {"metadata": {"labels": {"app": "d", "x": "y"}}},
                }
            },
        ),
    ),
    probe(
        "deployment.status-dropped-on-create",
        post(DEPLOYMENTS, {**deployment("d"), "status": {"replicas": 5, "readyReplicas": 5}}),
    ),
    probe(
        "deployment.generation",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(D, {"spec": {"replicas": 2}}, view=generation),
        merge(D, {"metadata": {"labels": {"a": "b"}}}, view=generation),
        merge(f"{D}/status", {"status": {"replicas": 2}}, view=generation),
        merge(
            D, {"spec": {"template": {"metadata": {"annotations": {"x": "y"}}}}}, view=generation
        ),
    ),
    probe(
        "deployment.status-update",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(f"{D}/status", {"status": {"replicas": 1, "observedGeneration": 1}}),
    ),
    probe(
        "deployment.scale-get", setup(post(DEPLOYMENTS, deployment("d", replicas=2))), get(SCALE)
    ),
    probe(
        "deployment.scale-update",
        setup(post(DEPLOYMENTS, deployment("d"))),
        put(SCALE, scale("d", 3)),
        get(D, view=generation),
    ),
    probe(
        "deployment.scale-patch",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(SCALE, {"spec": {"replicas": 4}}),
    ),
    probe(
        "deployment.scale-negative",
        setup(post(DEPLOYMENTS, deployment("d"))),
        put(SCALE, scale("d", -1)),
    ),
    probe(
        "deployment.scale-stale-resourceversion",
        setup(post(DEPLOYMENTS, deployment("d"))),
        put(SCALE, {**scale("d", 2), "metadata": {"name": "d", "resourceVersion": "1"}}),
    ),
    probe("deployment.scale-missing", get(f"{DEPLOYMENTS}/nope/scale")),
    probe(
        "deployment.scale-name-mismatch",
        setup(post(DEPLOYMENTS, deployment("d"))),
        put(SCALE, scale("other", 2)),
    ),
    # -- ReplicaSet
    probe("replicaset.create", post(REPLICASETS, replicaset("r"))),
    probe(
        "replicaset.selector-mismatch",
        post(
            REPLICASETS,
            {
                **replicaset("r"),
                "spec": {
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": template({"app": "y"}),
                },
            },
        ),
    ),
    probe("replicaset.replicas-negative", post(REPLICASETS, replicaset("r", replicas=-1))),
    probe(
        "replicaset.scale",
        setup(post(REPLICASETS, replicaset("r"))),
        put(f"{REPLICASETS}/r/scale", scale("r", 2)),
    ),
    # -- StatefulSet
    probe("statefulset.create", post(STATEFULSETS, statefulset("s"))),
    probe(
        "statefulset.update-forbidden-field",
        setup(post(STATEFULSETS, statefulset("s"))),
        merge(f"{STATEFULSETS}/s", {"spec": {"podManagementPolicy": "Parallel"}}),
    ),
    probe(
        "statefulset.update-replicas",
        setup(post(STATEFULSETS, statefulset("s"))),
        merge(f"{STATEFULSETS}/s", {"spec": {"replicas": 3}}, view=generation),
    ),
    probe(
        "statefulset.bad-pod-management-policy",
        post(STATEFULSETS, statefulset("s", podManagementPolicy="Whenever")),
    ),
    probe(
        "statefulset.scale",
        setup(post(STATEFULSETS, statefulset("s"))),
        get(f"{STATEFULSETS}/s/scale"),
    ),
]
