"""Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs: defaults,
validation, generation, the scale subresource."""

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
    strategic,
    template,
)

D = f"{DEPLOYMENTS}/d"
SCALE = f"{D}/scale"
DAEMONSETS = "/apis/apps/v1/namespaces/$ns/daemonsets"
JOBS = "/apis/batch/v1/namespaces/$ns/jobs"
CRONJOBS = "/apis/batch/v1/namespaces/$ns/cronjobs"


def pod_template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels} if labels else {},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def daemonset(name: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": labels}, "template": template(labels), **spec},
    }


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": pod_template({}, restartPolicy="Never"), **spec},
    }


def cronjob(name: str, **spec: Any) -> dict[str, Any]:
    job_spec = {"template": pod_template({}, restartPolicy="OnFailure")}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": job_spec}, **spec},
    }


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
    # -- Deployment rules
    probe(
        "deployment.zero-surge-and-unavailable",
        post(
            DEPLOYMENTS,
            deployment("d", strategy={"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
        ),
    ),
    probe(
        "deployment.bad-percent",
        post(
            DEPLOYMENTS,
            deployment("d", strategy={"rollingUpdate": {"maxUnavailable": "x%", "maxSurge": -1}}),
        ),
    ),
    probe(
        "deployment.template-restart-never",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": pod_template({"app": "d"}, restartPolicy="Never"),
                },
            },
        ),
    ),
    probe(
        "deployment.template-without-labels",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                },
            },
        ),
    ),
    probe(
        "deployment.negative-fields",
        post(DEPLOYMENTS, deployment("d", minReadySeconds=-1, revisionHistoryLimit=-1)),
    ),
    probe(
        "deployment.progress-deadline-below-min-ready",
        post(DEPLOYMENTS, deployment("d", minReadySeconds=10, progressDeadlineSeconds=5)),
    ),
    probe(
        "deployment.bad-selector-operator",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]},
                    "template": template({"app": "d"}),
                },
            },
        ),
    ),
    probe(
        "deployment.invalid-pod-template",
        post(
            DEPLOYMENTS,
            {
                **deployment("d"),
                "spec": {
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {
                        "metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [{"name": "C"}]},
                    },
                },
            },
        ),
    ),
    probe(
        "deployment.scale-strategic-patch",
        setup(post(DEPLOYMENTS, deployment("d"))),
        strategic(SCALE, {"spec": {"replicas": 3}}),
    ),
    probe(
        "deployment.scale-selector-expressions",
        setup(
            post(
                DEPLOYMENTS,
                {
                    **deployment("d"),
                    "spec": {
                        "selector": {
                            "matchLabels": {"tier": "web"},
                            "matchExpressions": [
                                {"key": "app", "operator": "In", "values": ["d", "b"]},
                                {"key": "zone", "operator": "DoesNotExist"},
                            ],
                        },
                        "template": template({"app": "d", "tier": "web"}),
                    },
                },
            )
        ),
        get(SCALE),
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
    probe(
        "replicaset.scale-get",
        setup(post(REPLICASETS, replicaset("r", replicas=3))),
        get(f"{REPLICASETS}/r/scale"),
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
    probe(
        "statefulset.bad-update-strategy",
        post(STATEFULSETS, statefulset("s", updateStrategy={"type": "Bogus"}, replicas=-1)),
    ),
    probe(
        "statefulset.on-delete-with-rolling-update",
        post(
            STATEFULSETS,
            statefulset(
                "s", updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}}
            ),
        ),
    ),
    probe(
        "statefulset.negative-partition",
        post(
            STATEFULSETS,
            statefulset(
                "s", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}
            ),
        ),
    ),
    probe(
        "statefulset.bad-retention-and-restart",
        post(
            STATEFULSETS,
            {
                **statefulset("s"),
                "spec": {
                    **statefulset("s")["spec"],
                    "template": pod_template({"app": "s"}, restartPolicy="Never"),
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "X", "whenScaled": "Y"},
                    "ordinals": {"start": -1},
                },
            },
        ),
    ),
    probe(
        "statefulset.selector-change-forbidden",
        setup(post(STATEFULSETS, statefulset("s"))),
        merge(
            f"{STATEFULSETS}/s",
            {
                "spec": {
                    "selector": {"matchLabels": {"app": "s", "x": "y"}},
                    "template": {"metadata": {"labels": {"x": "y"}}},
                }
            },
        ),
    ),
    probe(
        "statefulset.scale-update",
        setup(post(STATEFULSETS, statefulset("s"))),
        put(f"{STATEFULSETS}/s/scale", scale("s", 4)),
        get(f"{STATEFULSETS}/s", view=generation),
    ),
    # -- DaemonSet
    probe("daemonset.create", post(DAEMONSETS, daemonset("ds"))),
    probe(
        "daemonset.bad-update-strategy",
        post(DAEMONSETS, daemonset("ds", updateStrategy={"type": "Bogus"})),
    ),
    probe(
        "daemonset.selector-mismatch-and-restart",
        post(
            DAEMONSETS,
            {
                **daemonset("ds"),
                "spec": {
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": pod_template({"app": "ds"}, restartPolicy="OnFailure"),
                },
            },
        ),
    ),
    probe(
        "daemonset.no-selector",
        post(DAEMONSETS, {**daemonset("ds"), "spec": {"template": template({"app": "ds"})}}),
    ),
    probe(
        "daemonset.zero-unavailable-and-surge",
        post(
            DAEMONSETS,
            daemonset(
                "ds",
                updateStrategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0},
                },
            ),
        ),
    ),
    probe(
        "daemonset.selector-immutable",
        setup(post(DAEMONSETS, daemonset("ds"))),
        merge(
            f"{DAEMONSETS}/ds",
            {
                "spec": {
                    "selector": {"matchLabels": {"app": "ds", "x": "y"}},
                    "template": {"metadata": {"labels": {"x": "y"}}},
                }
            },
        ),
    ),
    # -- Job
    probe("job.create", post(JOBS, job("j"))),
    probe("job.restart-always", post(JOBS, job("j", template=pod_template({})))),
    probe(
        "job.negative-counts",
        post(
            JOBS,
            job("j", parallelism=-1, completions=-1, backoffLimit=-1, ttlSecondsAfterFinished=-1),
        ),
    ),
    probe("job.bad-completion-mode", post(JOBS, job("j", completionMode="Bogus"))),
    probe(
        "job.indexed-without-completions",
        post(JOBS, job("j", completionMode="Indexed", parallelism=2)),
    ),
    probe("job.manual-selector-missing", post(JOBS, job("j", manualSelector=True))),
    probe(
        "job.manual-selector",
        post(
            JOBS,
            job(
                "j",
                manualSelector=True,
                selector={"matchLabels": {"run": "j"}},
                template=pod_template({"run": "j"}, restartPolicy="OnFailure"),
            ),
        ),
    ),
    probe(
        "job.completions-immutable",
        setup(post(JOBS, job("j"))),
        merge(f"{JOBS}/j", {"spec": {"completions": 3}}),
    ),
    probe(
        "job.completion-mode-immutable",
        setup(post(JOBS, job("j"))),
        merge(f"{JOBS}/j", {"spec": {"completionMode": "Indexed"}}),
    ),
    probe(
        "job.template-immutable",
        setup(post(JOBS, job("j"))),
        strategic(
            f"{JOBS}/j",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
        ),
    ),
    # -- CronJob
    probe("cronjob.create", post(CRONJOBS, cronjob("cj"))),
    probe("cronjob.bad-schedule", post(CRONJOBS, cronjob("cj", schedule="bogus"))),
    probe("cronjob.no-schedule", post(CRONJOBS, cronjob("cj", schedule=""))),
    probe("cronjob.tz-in-schedule", post(CRONJOBS, cronjob("cj", schedule="TZ=UTC * * * * *"))),
    probe("cronjob.bad-time-zone", post(CRONJOBS, cronjob("cj", timeZone="Mars/Base"))),
    probe(
        "cronjob.bad-policies",
        post(
            CRONJOBS,
            cronjob(
                "cj",
                concurrencyPolicy="Sometimes",
                successfulJobsHistoryLimit=-1,
                startingDeadlineSeconds=-1,
            ),
        ),
    ),
    probe(
        "cronjob.restart-always",
        post(CRONJOBS, cronjob("cj", jobTemplate={"spec": {"template": pod_template({})}})),
    ),
    probe("cronjob.name-too-long", post(CRONJOBS, cronjob("c" * 53))),
]
