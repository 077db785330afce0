"""The bootstrap RBAC policy the apiserver writes at start (real objects, as
``kubectl get clusterroles`` shows them), and the ServiceAccount controller's one job here: a
``default`` ServiceAccount in every namespace.

admin/edit/view are the flattened result of kube's aggregation (their aggregate-to-* parts
folded in, kubetrio's kinds only); the emulator does not re-aggregate them later.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubetrio.emulator.auth.users import AUTHENTICATED, MASTERS, UNAUTHENTICATED
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store

RBAC = "rbac.authorization.k8s.io/v1"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _with_status(*names: str) -> list[str]:
    return [n for name in names for n in (name, f"{name}/status")]


_VIEW_RULES = [
    _rule(
        [""],
        [
            "configmaps",
            "endpoints",
            *_with_status("persistentvolumeclaims", "services", "resourcequotas"),
            "pods",
            "pods/log",
            "pods/status",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "replicationcontrollers/status",
            "serviceaccounts",
            "bindings",
            "events",
            "limitranges",
            "namespaces",
            "namespaces/status",
        ],
        READ,
    ),
    _rule(
        ["apps"],
        [
            "controllerrevisions",
            *_with_status("daemonsets", "deployments", "replicasets", "statefulsets"),
            "deployments/scale",
            "replicasets/scale",
            "statefulsets/scale",
        ],
        READ,
    ),
    _rule(["autoscaling"], _with_status("horizontalpodautoscalers"), READ),
    _rule(["batch"], _with_status("cronjobs", "jobs"), READ),
    _rule(["discovery.k8s.io"], ["endpointslices"], READ),
    _rule(["policy"], _with_status("poddisruptionbudgets"), READ),
    _rule(["networking.k8s.io"], [*_with_status("ingresses"), "networkpolicies"], READ),
]
_EDIT_RULES = [
    _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets"], READ),
    _rule([""], ["serviceaccounts"], ["impersonate"]),
    _rule(
        [""],
        [
            "pods",
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
        WRITE,
    ),
    _rule([""], ["pods/eviction", "serviceaccounts/token"], ["create"]),
    _rule(
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
        WRITE,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers"], WRITE),
    _rule(["batch"], ["cronjobs", "jobs"], WRITE),
    _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], WRITE),
    _rule(["policy"], ["poddisruptionbudgets"], WRITE),
    _rule(["discovery.k8s.io"], ["endpointslices"], WRITE),
]
_ADMIN_RULES = [
    _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
    _rule(["rbac.authorization.k8s.io"], ["roles", "rolebindings"], [*READ, *WRITE]),
]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *_PUBLIC_URLS]

CLUSTER_ROLES: dict[str, list[dict[str, Any]]] = {
    "cluster-admin": [
        _rule(["*"], ["*"], ["*"]),
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "admin": _VIEW_RULES + _EDIT_RULES + _ADMIN_RULES,
    "edit": _VIEW_RULES + _EDIT_RULES,
    "view": _VIEW_RULES,
    "system:discovery": [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}],
    "system:public-info-viewer": [{"nonResourceURLs": _PUBLIC_URLS, "verbs": ["get"]}],
    "system:basic-user": [
        _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews"], ["create"]),
        _rule(["authorization.k8s.io"], ["selfsubjectrulesreviews"], ["create"]),
        _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
    ],
}
CLUSTER_ROLE_BINDINGS: dict[str, list[str]] = {  # binding (= role) name -> groups bound
    "cluster-admin": [MASTERS],
    "system:discovery": [AUTHENTICATED],
    "system:basic-user": [AUTHENTICATED],
    "system:public-info-viewer": [AUTHENTICATED, UNAUTHENTICATED],
}
_BOOTSTRAP_META: dict[str, Any] = {
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
}


def _meta(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": dict(_BOOTSTRAP_META["labels"]),
        "annotations": dict(_BOOTSTRAP_META["annotations"]),
    }


def bootstrap_policy(store: Store, roles: ResourceType, bindings: ResourceType) -> None:
    """Create each bootstrap ClusterRole and binding that is missing (a restart on kept state
    leaves edited ones alone)."""
    for name, rules in CLUSTER_ROLES.items():
        if store.find(roles, "", name) is None:
            obj: dict[str, Any] = {"apiVersion": RBAC, "kind": "ClusterRole"}
            obj["metadata"] = _meta(name)
            obj["rules"] = rules
            store.create(roles, "", obj)
    for name, groups in CLUSTER_ROLE_BINDINGS.items():
        if store.find(bindings, "", name) is None:
            store.create(
                bindings,
                "",
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRoleBinding",
                    "metadata": _meta(name),
                    "roleRef": {
                        "apiGroup": RBAC.split("/")[0],
                        "kind": "ClusterRole",
                        "name": name,
                    },
                    "subjects": [
                        {"apiGroup": RBAC.split("/")[0], "kind": "Group", "name": g} for g in groups
                    ],
                },
            )


class DefaultServiceAccounts:
    """Keeps a ``default`` ServiceAccount in every live namespace, recreating it when deleted;
    a store hook, so it acts inside the write that made the namespace."""

    def __init__(self, store: Store, namespaces: ResourceType, accounts: ResourceType) -> None:
        self.store = store
        self.namespaces = namespaces
        self.accounts = accounts

    def start(self) -> None:
        for entry in list(self.store.iter(self.namespaces)):
            self._ensure(entry.obj["metadata"]["name"])
        self.store.subscribe(self._on_event)

    def _on_event(self, rt: ResourceType, ev: WatchEvent) -> None:
        md = ev.entry.obj["metadata"]
        if rt.key == self.namespaces.key and ev.type in ("ADDED", "MODIFIED"):
            self._ensure(md["name"])
        elif rt.key == self.accounts.key and ev.type == "DELETED" and md["name"] == "default":
            self._ensure(md.get("namespace", ""))

    def _ensure(self, ns: str) -> None:
        namespace = self.store.find(self.namespaces, "", ns)
        if namespace is None or namespace.obj["metadata"].get("deletionTimestamp"):
            return
        if self.store.find(self.accounts, ns, "default") is not None:
            return
        # The namespace may be going away (its contents are being deleted): nothing to keep.
        with contextlib.suppress(ApiError):
            self.store.create(
                self.accounts,
                ns,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": ns},
                },
            )
