"""The one table of API kinds kubetrio knows.

The client, the informers and the emulator all look kinds up here, so a kind is described once:
its group/version, plural, scope and subresources. Typed views (msgspec Structs) are attached to
entries by ``kubetrio.api`` modules as they are defined; a kind without one is still usable raw.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    KindInfo("v1", "Namespace", "namespaces", False, ("ns",), ("status",)),
    KindInfo("v1", "Node", "nodes", False, ("no",), ("status",)),
    KindInfo("v1", "Pod", "pods", True, ("po",), ("status", "eviction", "binding"), ("all",)),
    KindInfo("v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    KindInfo("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    KindInfo("v1", "Secret", "secrets", True),
    KindInfo("v1", "ConfigMap", "configmaps", True, ("cm",)),
    KindInfo("v1", "Event", "events", True, ("ev",)),
    KindInfo("v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    KindInfo("v1", "Service", "services", True, ("svc",), ("status",), ("all",)),
    KindInfo("v1", "ResourceQuota", "resourcequotas", True, ("quota",), ("status",)),
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
    KindInfo("apps/v1", "ReplicaSet", "replicasets", True, ("rs",), ("status",), ("all",)),
    KindInfo("apps/v1", "StatefulSet", "statefulsets", True, ("sts",), ("status",), ("all",)),
    KindInfo("apps/v1", "Deployment", "deployments", True, ("deploy",), ("status",), ("all",)),
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

SCALABLE = ("status", "scale")

# Custom kinds kubetrio's own controllers use; served through CustomResourceDefinitions.
MACHINE_KINDS: tuple[KindInfo, ...] = (
    KindInfo("machine.sapcloud.io/v1alpha1", "Machine", "machines", True, ("mach",), ("status",)),
    KindInfo("machine.sapcloud.io/v1alpha1", "MachineClass", "machineclasses", True, ("machcls",)),
    KindInfo("machine.sapcloud.io/v1alpha1", "MachineSet", "machinesets", True, ("mcs",), SCALABLE),
    KindInfo(
        "machine.sapcloud.io/v1alpha1",
        "MachineDeployment",
        "machinedeployments",
        True,
        ("mcd",),
        SCALABLE,
    ),
)

_BY_KIND: dict[tuple[str, str], KindInfo] = {
    (k.api_version, k.kind): k for k in BUILTIN_KINDS + MACHINE_KINDS
}


def lookup(api_version: str, kind: str) -> KindInfo:
    """The registered entry for ``apiVersion``/``kind``; KeyError names both when unknown."""
    try:
        return _BY_KIND[(api_version, kind)]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r} in apiVersion {api_version!r}") from None


def all_kinds() -> tuple[KindInfo, ...]:
    return tuple(_BY_KIND.values())
