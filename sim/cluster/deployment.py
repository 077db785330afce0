"""The Deployment controller, reduced to what a simulated cluster needs: the current pod template
has one ReplicaSet ``<deployment>-<template hash>`` at ``spec.replicas``; ReplicaSets of older
templates are scaled to zero at once (a Recreate rollout). ReplicaSets whose Deployment is gone
are the garbage collector's (``gc.collector``)."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass

import msgspec

from kubetrio.sim.cluster.objects import (
    Obj,
    Objects,
    owner_ref,
    owners_with_children,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.templates import counts_differ, replicas

HASH_LABEL = "pod-template-hash"


def template_hash(deployment: Obj) -> str:
    template = (deployment.get("spec") or {}).get("template") or {}
    encoded = msgspec.json.encode(template, order="sorted")
    return hashlib.sha256(encoded).hexdigest()[:10]


@dataclass
class Deployments:
    objs: Objects
    options: ClusterSimulation
    name: str = "deployment"
    watches: frozenset[str] = frozenset({"deployments.apps", "replicasets.apps"})

    def reconcile(self, now: float) -> float | None:
        objs = self.objs
        for deployment, sets in owners_with_children(
            objs, objs.deployments, objs.replicasets, "Deployment"
        ):
            self._sync(deployment, sets)
        return None

    def _sync(self, deployment: Obj, owned: list[Obj]) -> None:
        md = deployment["metadata"]
        ns = md.get("namespace", "default")
        want = replicas(deployment)
        name = f"{md['name']}-{template_hash(deployment)}"
        current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
        if current is None:
            current = self.objs.create(
                self.objs.replicasets, ns, self._replicaset(deployment, name)
            )
        elif replicas(current) != want:
            self.objs.mutate(
                self.objs.replicasets, current, lambda r: r["spec"].update(replicas=want)
            )
        for rs in owned:
            if rs["metadata"]["name"] != name and replicas(rs) != 0:
                self.objs.mutate(self.objs.replicasets, rs, lambda r: r["spec"].update(replicas=0))
        rs_status = (current or {}).get("status") or {}
        ready = int(rs_status.get("readyReplicas") or 0)
        status = {
            "replicas": int(rs_status.get("replicas") or 0),
            "updatedReplicas": int(rs_status.get("replicas") or 0),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": md.get("generation", 1),
        }
        if counts_differ(deployment, status):
            self.objs.mutate(
                self.objs.deployments,
                deployment,
                lambda d: d.setdefault("status", {}).update(status),
                status=True,
            )

    @staticmethod
    def _replicaset(deployment: Obj, name: str) -> Obj:
        spec = deployment.get("spec") or {}
        hash_ = name.rsplit("-", 1)[1]
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = hash_
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = hash_
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [owner_ref(deployment)],
            },
            "spec": {"replicas": replicas(deployment), "selector": selector, "template": template},
        }
