"""Deletion: answer shapes, finalizers, propagation policies, preconditions, grace periods,
collections, and eviction against PodDisruptionBudgets."""

from __future__ import annotations

from typing import Any

from ..crd import WIDGETS, widget
from ..runner import Poll, probe
from .objects import (
    CMS,
    DEPLOYMENTS,
    NS,
    PDBS,
    PODS,
    cm,
    delete,
    deployment,
    eviction,
    get,
    merge,
    names,
    pdb,
    pod,
    post,
    setup,
)

CM = f"{CMS}/c"
TEMPLATE = {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}
P = f"{PODS}/p"


def owned(name: str, owner_uid: str = "$owner", **meta: Any) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner_uid}
    return cm(name, ownerReferences=[ref], **meta)


OWNER = post(CMS, cm("owner"), capture={"owner": "metadata.uid"}, compare=False)


def gone(answer: dict[str, Any]) -> bool:
    return bool(answer["code"] == 404)


def _deletion_opts(**opts: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "DeleteOptions", **opts}


def pdb_status(allowed: int, healthy: int = 1, desired: int = 1) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": healthy,
        }
    }


PROBES = [
    probe("delete.answer-is-status", setup(post(CMS, cm("c"))), delete(CM)),
    probe("delete.missing", delete(f"{CMS}/nope")),
    probe(
        "delete.with-finalizer-answers-object",
        setup(post(CMS, cm("c", finalizers=["example.com/hold"]))),
        delete(CM),
        get(CM),
        delete(CM),
        merge(CM, {"metadata": {"finalizers": None}}),
        get(CM),
    ),
    probe(
        "delete.no-new-finalizers-while-deleting",
        setup(post(CMS, cm("c", finalizers=["example.com/hold"]))),
        setup(delete(CM)),
        merge(CM, {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}),
        setup(merge(CM, {"metadata": {"finalizers": None}})),
    ),
    probe(
        "delete.bad-finalizer-name",
        post(CMS, cm("c", finalizers=["no-slash"])),
    ),
    probe(
        "delete.precondition-uid",
        setup(post(CMS, cm("c"))),
        delete(CM, _deletion_opts(preconditions={"uid": "00000000-0000-0000-0000-000000000000"})),
    ),
    probe(
        "delete.precondition-resourceversion",
        setup(post(CMS, cm("c"))),
        delete(CM, _deletion_opts(preconditions={"resourceVersion": "1"})),
    ),
    probe(
        "delete.precondition-matches",
        post(
            CMS,
            cm("c"),
            capture={"rv": "metadata.resourceVersion", "uid": "metadata.uid"},
            compare=False,
        ),
        delete(CM, _deletion_opts(preconditions={"resourceVersion": "$rv", "uid": "$uid"})),
    ),
    probe(
        "delete.bad-propagation-policy",
        setup(post(CMS, cm("c"))),
        delete(f"{CM}?propagationPolicy=Sometimes"),
    ),
    probe(
        "delete.orphan-and-propagation",
        setup(post(CMS, cm("c"))),
        delete(CM, _deletion_opts(orphanDependents=True, propagationPolicy="Foreground")),
    ),
    probe(
        "delete.negative-grace-period",
        setup(post(CMS, cm("c"))),
        delete(f"{CM}?gracePeriodSeconds=-1"),
    ),
    probe(
        "delete.body-options",
        setup(post(CMS, cm("c"))),
        delete(CM, _deletion_opts(gracePeriodSeconds=0)),
    ),
    probe(
        "delete.bad-body",
        setup(post(CMS, cm("c"))),
        delete(CM, {"kind": "Pod", "apiVersion": "v1"}),
    ),
    probe("delete.dry-run", setup(post(CMS, cm("c"))), delete(f"{CM}?dryRun=All"), get(CM)),
    probe(
        "delete.orphan",
        OWNER,
        setup(post(CMS, owned("dep"))),
        delete(f"{CMS}/owner?propagationPolicy=Orphan"),
        Poll(get(f"{CMS}/owner"), until=gone),
        get(f"{CMS}/dep"),
    ),
    probe(
        "delete.foreground",
        OWNER,
        setup(post(CMS, owned("dep", finalizers=["example.com/hold"]))),
        delete(f"{CMS}/owner?propagationPolicy=Foreground"),
        Poll(
            get(f"{CMS}/dep"),
            until=lambda a: bool((a["body"] or {}).get("metadata", {}).get("deletionTimestamp")),
        ),
        get(f"{CMS}/owner"),
        merge(f"{CMS}/dep", {"metadata": {"finalizers": None}}),
        Poll(get(f"{CMS}/owner"), until=gone),
    ),
    probe(
        "delete.background",
        OWNER,
        setup(post(CMS, owned("dep"))),
        delete(f"{CMS}/owner?propagationPolicy=Background"),
        Poll(get(f"{CMS}/dep"), until=gone),
    ),
    probe(
        "delete.dangling-owner-collected",
        setup(post(CMS, owned("dep", owner_uid="00000000-0000-0000-0000-000000000001"))),
        Poll(get(f"{CMS}/dep"), until=gone),
    ),
    probe(
        "delete.collection",
        setup(post(CMS, cm("a", labels={"l": "x"}))),
        setup(post(CMS, cm("b", labels={"l": "x"}))),
        setup(post(CMS, cm("c", labels={"l": "y"}))),
        delete(f"{CMS}?labelSelector=l%3Dx", view=names),
        get(CMS, view=names),
    ),
    probe(
        "delete.collection-by-body",
        setup(post(CMS, cm("a"))),
        delete(CMS, _deletion_opts(gracePeriodSeconds=0), view=names),
    ),
    # -- eviction
    probe(
        "evict.no-budget",
        setup(post(PODS, pod("p", labels={"app": "x"}))),
        post(f"{P}/eviction", eviction("p")),
        get(P),
    ),
    probe(
        "evict.budget-blocks",
        setup(post(PODS, pod("p", labels={"app": "x"}))),
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        setup(merge(f"{PDBS}/b/status", pdb_status(0))),
        post(f"{P}/eviction", eviction("p")),
    ),
    probe(
        "evict.budget-allows",
        setup(post(PODS, pod("p", labels={"app": "x"}))),
        setup(post(PDBS, pdb("b", {"app": "x"}, maxUnavailable=1))),
        setup(merge(f"{PDBS}/b/status", pdb_status(1, 1, 0))),
        post(f"{P}/eviction", eviction("p")),
        get(f"{PDBS}/b", view=lambda b: b.get("status")),
    ),
    probe(
        "evict.budget-not-observed",
        setup(post(PODS, pod("p", labels={"app": "x"}))),
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        post(f"{P}/eviction", eviction("p")),
    ),
    probe(
        "evict.two-budgets",
        setup(post(PODS, pod("p", labels={"app": "x"}))),
        setup(post(PDBS, pdb("b1", {"app": "x"}, maxUnavailable=1))),
        setup(post(PDBS, pdb("b2", {"app": "x"}, maxUnavailable=1))),
        post(f"{P}/eviction", eviction("p")),
    ),
    probe("evict.missing-pod", post(f"{PODS}/nope/eviction", eviction("nope"))),
    probe(
        "evict.name-mismatch",
        setup(post(PODS, pod("p"))),
        post(f"{P}/eviction", eviction("q")),
    ),
    probe(
        "evict.dry-run",
        setup(post(PODS, pod("p"))),
        post(f"{P}/eviction", eviction("p", deleteOptions={"dryRun": ["All"]})),
        get(P, view=lambda b: b.get("metadata", {}).get("name")),
    ),
    probe(
        "evict.terminating-pod",
        setup(post(PODS, pod("p", labels={"app": "x"}, nodeName="n1"))),
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        setup(merge(f"{PDBS}/b/status", pdb_status(0))),
        setup(delete(P)),
        post(f"{P}/eviction", eviction("p")),
        setup(delete(f"{P}?gracePeriodSeconds=0")),
    ),
    # -- the answer per kind: a Status for most, the object where the registry returns it
    probe(
        "delete.secret-answers-status",
        setup(post(f"{NS}/secrets", {"metadata": {"name": "s"}, "type": "Opaque"})),
        delete(f"{NS}/secrets/s"),
    ),
    probe(
        "delete.service-account-answers-object",
        setup(post(f"{NS}/serviceaccounts", {"metadata": {"name": "sa"}})),
        delete(f"{NS}/serviceaccounts/sa"),
    ),
    probe(
        "delete.deployment-answers-status",
        setup(post(DEPLOYMENTS, deployment("d"))),
        delete(f"{DEPLOYMENTS}/d"),
    ),
    probe(
        "delete.pod-template-answers-object",
        setup(post(f"{NS}/podtemplates", {"metadata": {"name": "t"}, "template": TEMPLATE})),
        delete(f"{NS}/podtemplates/t"),
    ),
    probe(
        "delete.dry-run-answers-status",
        setup(post(CMS, cm("c"))),
        delete(f"{CM}?dryRun=All"),
        get(CM, view=lambda b: b.get("metadata", {}).get("name")),
    ),
    probe(
        "delete.custom-resource-answers-status",
        setup(post(WIDGETS, widget("w"))),
        delete(f"{WIDGETS}/w"),
        crd=True,
    ),
]
