"""The StatefulSet controller: pods ``<set>-<ordinal>`` with their claims
``<template>-<set>-<ordinal>`` (created when missing, kept when the pod goes), so a deleted or
evicted pod comes back under the same name with the same volume, once the old one is fully gone.
OrderedReady (the default) creates one missing pod at a time, lowest ordinal first, and waits
while a lower ordinal is not Ready; Parallel creates them all."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from kubetrio.sim.cluster.objects import (
    Obj,
    Objects,
    active,
    deleting,
    owners_with_children,
    pod_ready,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.templates import (
    counts_differ,
    pod_from_template,
    ready_count,
    replicas,
)


def ordinal(sts_name: str, pod_name: str) -> int | None:
    prefix, _, tail = pod_name.rpartition("-")
    return int(tail) if prefix == sts_name and tail.isdigit() else None


@dataclass
class StatefulSets:
    objs: Objects
    options: ClusterSimulation
    name: str = "statefulset"
    watches: frozenset[str] = frozenset({"pods", "statefulsets.apps", "persistentvolumeclaims"})

    def reconcile(self, now: float) -> float | None:
        objs = self.objs
        for sts, pods in owners_with_children(objs, objs.statefulsets, objs.pods, "StatefulSet"):
            self._sync(sts, pods)
        return None

    def _sync(self, sts: Obj, owned: list[Obj]) -> None:
        name = sts["metadata"]["name"]
        ns = sts["metadata"].get("namespace", "default")
        want = replicas(sts)
        ordered = (sts.get("spec") or {}).get("podManagementPolicy") != "Parallel"
        for i in range(want):
            pod = self.objs.get(self.objs.pods, ns, f"{name}-{i}")
            if pod is None:
                self._create(sts, i)
                if ordered:
                    break
            elif ordered and (deleting(pod) or not pod_ready(pod)):
                break
        surplus = sorted(
            (p for p in owned if active(p) and (ordinal(name, p["metadata"]["name"]) or 0) >= want),
            key=lambda p: -(ordinal(name, p["metadata"]["name"]) or 0),
        )
        for pod in surplus[:1] if ordered else surplus:
            self.objs.delete(self.objs.pods, pod)
        self._status(sts, [p for p in owned if active(p)])

    def _create(self, sts: Obj, i: int) -> None:
        name = sts["metadata"]["name"]
        ns = sts["metadata"].get("namespace", "default")
        spec = sts.get("spec") or {}
        pod_name = f"{name}-{i}"
        pod = pod_from_template(sts, name=pod_name)
        pod["metadata"]["labels"].update(
            {"statefulset.kubernetes.io/pod-name": pod_name, "apps.kubernetes.io/pod-index": str(i)}
        )
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        volumes = [v for v in pod["spec"].get("volumes") or [] if isinstance(v, dict)]
        for template in spec.get("volumeClaimTemplates") or []:
            tname = (template.get("metadata") or {}).get("name", "")
            claim = f"{tname}-{name}-{i}"
            if self.objs.get(self.objs.pvcs, ns, claim) is None:
                self.objs.create(self.objs.pvcs, ns, self._claim(sts, template, claim))
            volumes = [v for v in volumes if v.get("name") != tname]
            volumes.append({"name": tname, "persistentVolumeClaim": {"claimName": claim}})
        if volumes:
            pod["spec"]["volumes"] = volumes
        self.objs.create(self.objs.pods, ns, pod)

    @staticmethod
    def _claim(sts: Obj, template: Obj, claim: str) -> Obj:
        tmd = template.get("metadata") or {}
        labels = dict(tmd.get("labels") or {})
        labels.update(((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "labels": labels},
            "spec": copy.deepcopy(template.get("spec") or {}),
        }

    def _status(self, sts: Obj, live: list[Obj]) -> None:
        ready = ready_count(live)
        status = {
            "replicas": len(live),
            "readyReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
            "availableReplicas": ready,
            "observedGeneration": sts["metadata"].get("generation", 1),
        }
        if counts_differ(sts, status):
            self.objs.mutate(
                self.objs.statefulsets,
                sts,
                lambda s: s.setdefault("status", {}).update(status),
                status=True,
            )
