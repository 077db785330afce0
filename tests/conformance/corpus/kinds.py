"""The other built-in kinds the framework touches: PodDisruptionBudget, Lease, Event (both
APIs), Node, PersistentVolume and PersistentVolumeClaim; and the kinds controllers commonly
watch (Endpoints, EndpointSlice, storage classes and drivers, ControllerRevision, HPA,
NetworkPolicy, ...): created, read, listed and deleted, each delete answered as its registry
answers (the object or a Success Status)."""

from __future__ import annotations

from typing import Any

from ..runner import probe
from .objects import (
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NEW_EVENTS,
    NODES,
    NS,
    PDBS,
    PVCS,
    PVS,
    ROLEBINDINGS,
    ROLES,
    delete,
    deployment,
    get,
    merge,
    names,
    pdb,
    post,
    setup,
)

NODE = f"{NODES}/$ns-node"
ENDPOINTS = f"{NS}/endpoints"
LIMITRANGES = f"{NS}/limitranges"
PODTEMPLATES = f"{NS}/podtemplates"
REVISIONS = "/apis/apps/v1/namespaces/$ns/controllerrevisions"
HPAS = "/apis/autoscaling/v2/namespaces/$ns/horizontalpodautoscalers"
HPAS_V1 = "/apis/autoscaling/v1/namespaces/$ns/horizontalpodautoscalers"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/$ns/endpointslices"
NETPOLS = "/apis/networking.k8s.io/v1/namespaces/$ns/networkpolicies"
INGRESSCLASSES = "/apis/networking.k8s.io/v1/ingressclasses"
RUNTIMECLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
STORAGE = "/apis/storage.k8s.io/v1"
STORAGECLASSES = f"{STORAGE}/storageclasses"
CSIDRIVERS = f"{STORAGE}/csidrivers"
CSINODES = f"{STORAGE}/csinodes"
CAPACITIES = f"{STORAGE}/namespaces/$ns/csistoragecapacities"
# No protection controller runs beside the real server: drop its finalizer so the probe's
# namespace (or the volume) can go.
RELEASE = {"metadata": {"finalizers": None}}
PV = f"{PVS}/$ns-pv"
PRIORITYCLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
PC = f"{PRIORITYCLASSES}/$ns-pc"
RBAC = "rbac.authorization.k8s.io"


def priorityclass(value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "$ns-pc"},
        "value": value,
        **fields,
    }


def role(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": list(rules),
    }


def binding(role_name: str = "r", *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": role_name},
        "subjects": list(subjects) or [{"kind": "ServiceAccount", "name": "default"}],
    }


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": spec,
    }


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, **fields}


INVOLVED = {"kind": "Pod", "name": "p", "namespace": "$ns", "apiVersion": "v1"}


def obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


def revision(name: str) -> dict[str, Any]:
    return obj("apps/v1", "ControllerRevision", name, revision=1, data={"a": 1})


def slice_(name: str, **fields: Any) -> dict[str, Any]:
    body = {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        **fields,
    }
    return obj("discovery.k8s.io/v1", "EndpointSlice", name, **body)


def storageclass() -> dict[str, Any]:
    return obj(
        "storage.k8s.io/v1",
        "StorageClass",
        "$ns-sc",
        provisioner="example.com/disk",
        reclaimPolicy="Delete",
        volumeBindingMode="WaitForFirstConsumer",
    )


def hpa(name: str) -> dict[str, Any]:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
    return obj(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        name,
        spec={
            "scaleTargetRef": target,
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": cpu}],
        },
    )


POD_TEMPLATE = {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}

# (plural, collection path, object) of each kind a controller commonly watches.
WATCHED: list[tuple[str, str, dict[str, Any]]] = [
    (
        "endpoints",
        ENDPOINTS,
        obj(
            "v1",
            "Endpoints",
            "e",
            subsets=[{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
        ),
    ),
    (
        "limitranges",
        LIMITRANGES,
        obj(
            "v1",
            "LimitRange",
            "l",
            spec={"limits": [{"type": "Container", "max": {"cpu": "1"}}]},
        ),
    ),
    ("podtemplates", PODTEMPLATES, obj("v1", "PodTemplate", "t", template=POD_TEMPLATE)),
    ("controllerrevisions", REVISIONS, revision("r")),
    ("horizontalpodautoscalers", HPAS, hpa("h")),
    ("endpointslices", SLICES, slice_("s")),
    (
        "networkpolicies",
        NETPOLS,
        obj(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "np",
            spec={"podSelector": {}, "policyTypes": ["Ingress"]},
        ),
    ),
    (
        "ingressclasses",
        INGRESSCLASSES,
        obj("networking.k8s.io/v1", "IngressClass", "$ns-ic", spec={"controller": "x.io/c"}),
    ),
    (
        "runtimeclasses",
        RUNTIMECLASSES,
        obj("node.k8s.io/v1", "RuntimeClass", "$ns-rc", handler="runc"),
    ),
    ("storageclasses", STORAGECLASSES, storageclass()),
    (
        "csidrivers",
        CSIDRIVERS,
        obj(
            "storage.k8s.io/v1",
            "CSIDriver",
            "$ns.csi.example.com",
            spec={
                "attachRequired": True,
                "podInfoOnMount": False,
                "requiresRepublish": False,
                "storageCapacity": False,
                "fsGroupPolicy": "ReadWriteOnceWithFSType",
                "volumeLifecycleModes": ["Persistent"],
                "seLinuxMount": False,
            },
        ),
    ),
    (
        "csinodes",
        CSINODES,
        obj("storage.k8s.io/v1", "CSINode", "$ns-node", spec={"drivers": []}),
    ),
    (
        "csistoragecapacities",
        CAPACITIES,
        obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap", storageClassName="sc"),
    ),
]


def node(name: str = "$ns-node", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}


def pv(name: str = "$ns-pv", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/tmp/pv"},
        **spec,
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": body,
    }


def pvc(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        **spec,
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": body,
    }


PROBES = [
    # -- PodDisruptionBudget
    probe("pdb.create", post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
    probe(
        "pdb.min-and-max",
        post(PDBS, pdb("b", {"app": "x"}, minAvailable=1, maxUnavailable=1)),
    ),
    probe("pdb.bad-percentage", post(PDBS, pdb("b", {"app": "x"}, minAvailable="150%"))),
    probe("pdb.negative", post(PDBS, pdb("b", {"app": "x"}, maxUnavailable=-1))),
    probe("pdb.bad-selector", post(PDBS, pdb("b", {"app": "bad value!"}, minAvailable=1))),
    probe("pdb.bad-string", post(PDBS, pdb("b", {"app": "x"}, maxUnavailable="half"))),
    probe(
        "pdb.negative-on-update",
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        merge(f"{PDBS}/b", {"spec": {"minAvailable": -2}}),
    ),
    probe(
        "pdb.update-spec",
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        merge(f"{PDBS}/b", {"spec": {"minAvailable": 2}}),
    ),
    probe(
        "pdb.status-update",
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        merge(
            f"{PDBS}/b/status",
            {
                "status": {
                    "observedGeneration": 1,
                    "disruptionsAllowed": 1,
                    "currentHealthy": 2,
                    "desiredHealthy": 1,
                    "expectedPods": 2,
                }
            },
        ),
    ),
    # -- Lease
    probe(
        "lease.create",
        post(
            LEASES,
            lease(
                "l",
                holderIdentity="me",
                leaseDurationSeconds=15,
                renewTime="2024-01-02T03:04:05.123456Z",
            ),
        ),
    ),
    probe(
        "pdb.status-dropped-on-create",
        post(PDBS, {**pdb("b", {"app": "x"}, minAvailable=1), "status": {"currentHealthy": 3}}),
    ),
    probe("lease.zero-duration", post(LEASES, lease("l", leaseDurationSeconds=0))),
    probe(
        "lease.update-holder",
        setup(post(LEASES, lease("l", holderIdentity="a", leaseDurationSeconds=15))),
        merge(f"{LEASES}/l", {"spec": {"holderIdentity": "b", "leaseTransitions": 1}}),
    ),
    probe("lease.negative-transitions", post(LEASES, lease("l", leaseTransitions=-1))),
    probe(
        "lease.bad-label-on-update",
        setup(post(LEASES, lease("l", leaseDurationSeconds=15))),
        merge(f"{LEASES}/l", {"metadata": {"labels": {"k": "bad value!"}}}),
    ),
    probe(
        "lease.zero-duration-on-update",
        setup(post(LEASES, lease("l", leaseDurationSeconds=15))),
        merge(f"{LEASES}/l", {"spec": {"leaseDurationSeconds": 0}}),
    ),
    # -- Event (core/v1 and events.k8s.io/v1)
    probe(
        "event.create",
        post(
            EVENTS,
            event(
                "e",
                involvedObject=INVOLVED,
                reason="Started",
                message="hello",
                type="Normal",
                source={"component": "probe"},
                count=1,
            ),
        ),
    ),
    probe("event.no-involved-object", post(EVENTS, event("e", reason="R", message="m"))),
    probe(
        "event.involved-object-other-namespace",
        post(EVENTS, event("e", involvedObject={**INVOLVED, "namespace": "elsewhere"})),
    ),
    probe(
        "event.involved-object-moved-on-update",
        setup(post(EVENTS, event("e", involvedObject=INVOLVED))),
        merge(f"{EVENTS}/e", {"involvedObject": {"namespace": "elsewhere"}}),
    ),
    probe("event.bad-type", post(EVENTS, event("e", involvedObject=INVOLVED, type="Loud"))),
    probe(
        "event.new-api-create",
        post(
            NEW_EVENTS,
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "e"},
                "eventTime": "2024-01-02T03:04:05.000000Z",
                "reportingController": "example.com/probe",
                "reportingInstance": "probe-1",
                "action": "Probe",
                "reason": "Probed",
                "type": "Normal",
                "regarding": INVOLVED,
                "note": "hello",
            },
        ),
    ),
    probe(
        "event.new-api-missing-fields",
        post(
            NEW_EVENTS,
            {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}},
        ),
    ),
    # -- Node
    probe("node.create", post(NODES, node()), delete(NODE)),
    probe(
        "node.bad-taint-effect",
        post(NODES, node(taints=[{"key": "k", "value": "v", "effect": "Sometimes"}])),
    ),
    probe(
        "node.duplicate-taints",
        post(
            NODES,
            node(
                taints=[{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]
            ),
        ),
    ),
    probe("node.taint-without-key", post(NODES, node(taints=[{"effect": "NoSchedule"}]))),
    probe(
        "node.bad-taint-on-update",
        setup(post(NODES, node())),
        merge(NODE, {"spec": {"taints": [{"key": "k", "effect": "Never"}]}}),
        setup(delete(NODE)),
    ),
    probe(
        "node.cordon",
        setup(post(NODES, node())),
        merge(NODE, {"spec": {"unschedulable": True}}),
        setup(delete(NODE)),
    ),
    probe(
        "node.status-update",
        setup(post(NODES, node())),
        merge(
            f"{NODE}/status",
            {"status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        ),
        setup(delete(NODE)),
    ),
    probe(
        "node.status-on-create",
        post(NODES, {**node(), "status": {"capacity": {"cpu": "2"}}}),
        setup(delete(NODE)),
    ),
    probe("node.get-missing", get(f"{NODES}/$ns-missing")),
    # -- PersistentVolume / PersistentVolumeClaim
    probe(
        "pv.create",
        post(PVS, pv()),
        delete(PV),
        setup(merge(PV, {"metadata": {"finalizers": None}})),
    ),
    probe("pv.no-capacity", post(PVS, pv(capacity=None))),
    probe("pv.no-source", post(PVS, pv(hostPath=None))),
    probe("pv.bad-reclaim-policy", post(PVS, pv(persistentVolumeReclaimPolicy="Keep"))),
    probe("pv.bad-access-mode", post(PVS, pv(accessModes=["Sometimes"]))),
    probe(
        "pv.source-immutable",
        setup(post(PVS, pv())),
        merge(PV, {"spec": {"hostPath": {"path": "/tmp/other"}}}),
        setup(merge(PV, {"metadata": {"finalizers": None}})),
        setup(delete(PV)),
    ),
    probe("pvc.bad-access-mode", post(PVCS, pvc("c", accessModes=["Sometimes"]))),
    probe("pvc.bad-storage-class-name", post(PVCS, pvc("c", storageClassName="Bad_Class"))),
    probe("pv.two-sources", post(PVS, pv(nfs={"server": "example.com", "path": "/x"}))),
    probe("pvc.zero-storage", post(PVCS, pvc("c", resources={"requests": {"storage": "0"}}))),
    probe("pvc.create", post(PVCS, pvc("c")), setup(merge(f"{PVCS}/c", RELEASE))),
    probe(
        "pvc.status-dropped-on-create",
        post(PVCS, {**pvc("c"), "status": {"phase": "Bound"}}),
        setup(merge(f"{PVCS}/c", RELEASE)),
    ),
    probe("pvc.no-resources", post(PVCS, pvc("c", resources=None))),
    probe("pvc.no-access-modes", post(PVCS, pvc("c", accessModes=[]))),
    probe(
        "pvc.spec-immutable",
        setup(post(PVCS, pvc("c"))),
        merge(f"{PVCS}/c", {"spec": {"accessModes": ["ReadWriteMany"]}}),
        setup(merge(f"{PVCS}/c", RELEASE)),
    ),
    probe(
        "pvc.storage-class",
        post(PVCS, pvc("c", storageClassName="fast")),
        get(f"{PVCS}/c"),
        setup(merge(f"{PVCS}/c", RELEASE)),
    ),
    # -- metadata.generation: what raises it is each kind's own choice
    probe(
        "generation.deployment-annotation",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(f"{DEPLOYMENTS}/d", {"metadata": {"annotations": {"note": "x"}}}),
        merge(f"{DEPLOYMENTS}/d", {"metadata": {"labels": {"more": "y"}}}),
    ),
    probe(
        "generation.pdb-label",
        setup(post(PDBS, pdb("b", {"app": "x"}, minAvailable=1))),
        merge(f"{PDBS}/b", {"metadata": {"labels": {"more": "y"}}}),
        merge(f"{PDBS}/b", {"spec": {"minAvailable": 2}}),
    ),
    probe(
        "generation.namespace-absent",
        merge(NS, {"metadata": {"labels": {"more": "y"}}}),
    ),
    # -- PriorityClass
    probe("priorityclass.create", post(PRIORITYCLASSES, priorityclass(1000)), setup(delete(PC))),
    probe("priorityclass.too-high", post(PRIORITYCLASSES, priorityclass(2000000000))),
    probe(
        "priorityclass.value-immutable",
        setup(post(PRIORITYCLASSES, priorityclass(1000))),
        merge(PC, {"value": 2000}),
        merge(PC, {"description": "may change"}),
        setup(delete(PC)),
    ),
    probe(
        "priorityclass.bad-preemption-policy",
        post(PRIORITYCLASSES, priorityclass(1000, preemptionPolicy="Sometimes")),
    ),
    # -- RBAC
    probe("rbac.role-without-verbs", post(ROLES, role({"apiGroups": [""], "resources": ["pods"]}))),
    probe(
        "rbac.role-url-rule",
        post(ROLES, role({"nonResourceURLs": ["/healthz"], "verbs": ["get"]})),
    ),
    probe(
        "rbac.binding-bad-role-kind",
        post(
            ROLEBINDINGS,
            {**binding(), "roleRef": {"apiGroup": RBAC, "kind": "Secret", "name": "r"}},
        ),
    ),
    probe("rbac.binding-subject-without-name", post(ROLEBINDINGS, binding("r", {"kind": "User"}))),
    probe(
        "rbac.cluster-binding-account-without-namespace",
        post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                **binding("view", {"kind": "ServiceAccount", "name": "default"}),
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "$ns-crb"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            },
        ),
    ),
    probe(
        "priorityclass.system-prefix",
        post(PRIORITYCLASSES, {**priorityclass(5), "metadata": {"name": "system-probe"}}),
    ),
    probe(
        "rbac.binding-role-ref-immutable",
        setup(post(ROLEBINDINGS, binding())),
        merge(
            f"{ROLEBINDINGS}/b", {"roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "other"}}
        ),
    ),
    # -- the kinds controllers watch: create, get, list and delete each
    *(
        probe(
            f"kinds.{plural}",
            post(base, body),
            get(f"{base}/{body['metadata']['name']}"),
            get(f"{base}?fieldSelector=metadata.name%3D{body['metadata']['name']}", view=names),
            delete(f"{base}/{body['metadata']['name']}"),
        )
        for plural, base, body in WATCHED
    ),
    probe(
        "kinds.controllerrevision-immutable-data",
        setup(post(REVISIONS, revision("r"))),
        merge(f"{REVISIONS}/r", {"data": {"b": 2}}),
    ),
    probe("kinds.endpointslice-bad-address-type", post(SLICES, slice_("s", addressType="IPv5"))),
    probe(
        "kinds.storageclass-delete-answers-object",
        setup(post(STORAGECLASSES, storageclass())),
        delete(f"{STORAGECLASSES}/$ns-sc"),
        get(f"{STORAGECLASSES}/$ns-sc"),
    ),
    probe(
        "kinds.hpa-status",
        setup(post(HPAS, hpa("h"))),
        merge(
            f"{HPAS}/h/status",
            {"status": {"currentReplicas": 1, "desiredReplicas": 2}},
        ),
        setup(delete(f"{HPAS}/h")),
    ),
    probe(
        "kinds.hpa-defaults",
        post(
            HPAS,
            obj(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                "h",
                spec={
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                    "maxReplicas": 4,
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
                },
            ),
        ),
        setup(delete(f"{HPAS}/h")),
    ),
    # -- autoscaling/v1: the same objects, converted as kube converts them
    probe(
        "kinds.hpa-v1-create",
        post(
            HPAS_V1,
            obj(
                "autoscaling/v1",
                "HorizontalPodAutoscaler",
                "h",
                spec={
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                    "maxReplicas": 4,
                    "targetCPUUtilizationPercentage": 70,
                },
            ),
        ),
        get(f"{HPAS}/h"),
        get(f"{HPAS_V1}?fieldSelector=metadata.name%3Dh"),
        setup(delete(f"{HPAS}/h")),
    ),
    probe(
        "kinds.hpa-v2-read-as-v1",
        setup(
            post(
                HPAS,
                obj(
                    "autoscaling/v2",
                    "HorizontalPodAutoscaler",
                    "h",
                    spec={
                        "scaleTargetRef": {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": "d",
                        },
                        "maxReplicas": 4,
                        "metrics": [
                            {
                                "type": "Resource",
                                "resource": {
                                    "name": "memory",
                                    "target": {"type": "AverageValue", "averageValue": "100Mi"},
                                },
                            }
                        ],
                        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
                    },
                ),
            )
        ),
        get(f"{HPAS_V1}/h"),
        merge(f"{HPAS_V1}/h", {"spec": {"maxReplicas": 5}}),
        get(f"{HPAS}/h"),
        setup(delete(f"{HPAS}/h")),
    ),
]
