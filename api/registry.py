"""The one table of API kinds kubetrio knows.

The client, the informers and the emulator all look kinds up here, so a kind is described once:
its group/version, plural, scope and subresources. Typed views (msgspec Structs) are attached to
entries by ``kubetrio.api`` modules as they are defined; a kind without one is still usable raw.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One column ``kubectl get`` shows for a custom kind (a CRD's ``additionalPrinterColumns``).

    ``json_path`` is evaluated against each object, e.g. ``".spec.style"``; priority 0 columns are
    shown always, higher ones only with ``-o wide``."""

    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True, slots=True)
class Scale:
    """The scale subresource's paths, so ``kubectl scale`` and autoscalers can resize the kind."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True, slots=True)
class CrdFacts:
    """What only a CustomResourceDefinition needs to know: the generator reads it from here so
    a declared class is all ``kubetrio crd generate`` needs."""

    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: Scale | None = None
    storage: bool = True
    served: bool = True
    # ``module:Class`` that declared the kind: the install hint names it. Not part of identity, as
    # one module may be imported under two names (pytest's importlib mode does that).
    source: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class KindInfo:
    """How one kind is addressed on the API server."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    singular: str = field(default="")
    crd: CrdFacts | None = None

    @property
    def group(self) -> str:
        """The API group; "" for the legacy core group."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def name_singular(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def group_resource(self) -> str:
        """``plural.group`` as kubectl and RBAC spell it (just ``plural`` for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


# Built-in kinds served by every API server we talk to (and by the emulator).
BUILTIN_KINDS: tuple[KindInfo, ...] = (
    KindInfo("v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize")),
    KindInfo("v1", "Node", "nodes", False, ("no",), ("status",)),
    KindInfo(
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "eviction", "binding", "ephemeralcontainers", "resize"),
        ("all",),
    ),
    KindInfo("v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    KindInfo("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    KindInfo("v1", "Secret", "secrets", True),
    KindInfo("v1", "ConfigMap", "configmaps", True, ("cm",)),
    KindInfo("v1", "Event", "events", True, ("ev",)),
    KindInfo("v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    KindInfo("v1", "Service", "services", True, ("svc",), ("status",), ("all",)),
    KindInfo("v1", "ResourceQuota", "resourcequotas", True, ("quota",), ("status",)),
    KindInfo("v1", "Endpoints", "endpoints", True, ("ep",), singular="endpoints"),
    KindInfo("v1", "LimitRange", "limitranges", True, ("limits",)),
    KindInfo("v1", "PodTemplate", "podtemplates", True),
    KindInfo(
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        True,
        ("rc",),
        ("status",),
        ("all",),
    ),
    KindInfo("batch/v1", "Job", "jobs", True, (), ("status",), ("all",)),
    KindInfo("batch/v1", "CronJob", "cronjobs", True, ("cj",), ("status",), ("all",)),
    KindInfo("networking.k8s.io/v1", "Ingress", "ingresses", True, ("ing",), ("status",)),
    KindInfo("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    KindInfo("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    KindInfo("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    KindInfo("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    KindInfo("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    KindInfo(
        "policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)
    ),
    KindInfo("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", False, (), ("status",)),
    KindInfo("coordination.k8s.io/v1", "Lease", "leases", True),
    KindInfo("apps/v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), ("all",)),
    KindInfo("apps/v1", "ReplicaSet", "replicasets", True, ("rs",), ("status", "scale"), ("all",)),
    KindInfo(
        "apps/v1", "StatefulSet", "statefulsets", True, ("sts",), ("status", "scale"), ("all",)
    ),
    KindInfo(
        "apps/v1", "Deployment", "deployments", True, ("deploy",), ("status", "scale"), ("all",)
    ),
    KindInfo("apps/v1", "ControllerRevision", "controllerrevisions", True),
    KindInfo(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        True,
        ("hpa",),
        ("status",),
        ("all",),
    ),
    KindInfo(
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        False,
        ("csr",),
        ("status",),
    ),
    KindInfo("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True),
    KindInfo("networking.k8s.io/v1", "IngressClass", "ingressclasses", False),
    KindInfo("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    KindInfo("networking.k8s.io/v1", "IPAddress", "ipaddresses", False, ("ip",)),
    KindInfo("networking.k8s.io/v1", "ServiceCIDR", "servicecidrs", False, (), ("status",)),
    KindInfo("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", False),
    KindInfo("storage.k8s.io/v1", "StorageClass", "storageclasses", False, ("sc",)),
    KindInfo("storage.k8s.io/v1", "CSIDriver", "csidrivers", False),
    KindInfo("storage.k8s.io/v1", "CSINode", "csinodes", False),
    KindInfo("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", True),
    KindInfo(
        "storage.k8s.io/v1", "VolumeAttributesClass", "volumeattributesclasses", False, ("vac",)
    ),
    KindInfo("resource.k8s.io/v1", "DeviceClass", "deviceclasses", False),
    KindInfo("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", True, (), ("status",)),
    KindInfo("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    KindInfo("resource.k8s.io/v1", "ResourceSlice", "resourceslices", False),
    KindInfo(
        "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "flowschemas", False, (), ("status",)
    ),
    KindInfo(
        "flowcontrol.apiserver.k8s.io/v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        False,
        (),
        ("status",),
    ),
    KindInfo(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    KindInfo(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
    ),
    KindInfo(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
)

# Custom kinds (kubetrio's own machine kinds among them) join through register(), which
# @kubetrio.api.resource calls as each class is declared.
_BY_KIND: dict[tuple[str, str], KindInfo] = {(k.api_version, k.kind): k for k in BUILTIN_KINDS}


# Groups whose kinds kubetrio itself declares, by the module declaring them: looking one up by
# name works before anything imported the class.
_HOMES = {"machine.sapcloud.io": "kubetrio.api.machineset"}


class KindConflict(ValueError):
    """Two different declarations of one ``apiVersion``/``kind``."""


def register(info: KindInfo) -> KindInfo:
    """Make ``info`` known to the client, the informers and the emulator's kind table.

    Registering the same declaration again is a no-op (a module imported twice); a different
    one for the same apiVersion/kind raises ``KindConflict`` naming both, because two classes
    disagreeing on a kind's plural or scope would address different URLs."""
    key = (info.api_version, info.kind)
    known = _BY_KIND.get(key)
    if known is not None and known != info:
        raise KindConflict(
            f"kind {info.kind!r} in apiVersion {info.api_version!r} is already registered "
            f"differently: {known} vs {info}"
        )
    _BY_KIND.setdefault(key, info)
    return _BY_KIND[key]


def lookup(api_version: str, kind: str) -> KindInfo:
    """The registered entry for ``apiVersion``/``kind``; KeyError names the fix when unknown."""
    key = (api_version, kind)
    home = _HOMES.get(api_version.rpartition("/")[0])
    if key not in _BY_KIND and home is not None:
        importlib.import_module(home)  # declares kubetrio's own kinds of that group
    try:
        return _BY_KIND[key]
    except KeyError:
        raise KeyError(
            f"unknown kind {kind!r} in apiVersion {api_version!r}: declare its class with "
            f"@kubetrio.api.resource(group=..., version=...)"
        ) from None


def all_kinds() -> tuple[KindInfo, ...]:
    return tuple(_BY_KIND.values())
