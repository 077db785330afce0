"""The resource types the emulator serves: built-ins from the shared kind table plus CRDs.

One ``ResourceType`` per group/plural; objects of a type are stored once whatever version a
request names, as the real apiserver stores one version and converts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrio.api.registry import BUILTIN_KINDS, KindInfo


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One CRD ``additionalPrinterColumns`` entry (jsonPath restricted to dotted fields)."""

    name: str
    type: str
    json_path: str
    priority: int = 0
    description: str = ""


# Subresources that read and write the object itself, each changing only its own part: the
# status, a pod's ephemeral containers and its containers' resources.
OBJECT_VIEWS = ("status", "ephemeralcontainers", "resize")


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    builtin: bool = True
    printer_columns: tuple[PrinterColumn, ...] = ()
    field_labels: tuple[str, ...] = field(default=())
    # Only these verbs (create-only reviews, never stored); empty: every usual verb.
    verbs: tuple[str, ...] = ()
    # A DELETE that removes the object at once answers with it (kube's ReturnDeletedObject);
    # otherwise with a Success Status naming it.
    returns_deleted: bool = False

    @property
    def key(self) -> str:
        """Group-qualified plural: the store's name for this resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


# Field selectors each built-in supports beyond metadata.name / metadata.namespace
# (the apiserver's per-kind GetAttrs / AddFieldLabelConversionFunc lists).
_FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "persistentvolumeclaims": ("status.phase",),
    "persistentvolumes": ("status.phase",),
    "replicasets": ("status.replicas",),
    "replicationcontrollers": ("status.replicas",),
    "certificatesigningrequests": ("spec.signerName",),
}


# Built-ins whose registry answers a DELETE with the deleted object rather than a Status
# (ReturnDeletedObject in kube's storage for them), as a cluster answers.
_RETURNS_DELETED = frozenset(
    {
        "pods",
        "podtemplates",
        "serviceaccounts",
        "services",
        "resourcequotas",
        "persistentvolumes",
        "persistentvolumeclaims",
        "namespaces",
        "customresourcedefinitions.apiextensions.k8s.io",
        "storageclasses.storage.k8s.io",
        "csidrivers.storage.k8s.io",
        "csinodes.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
        "volumeattributesclasses.storage.k8s.io",
        "deviceclasses.resource.k8s.io",
        "resourceclaims.resource.k8s.io",
        "resourceclaimtemplates.resource.k8s.io",
        "resourceslices.resource.k8s.io",
    }
)


# Built-ins served in more versions than their storage one (converted on the way in and out).
_MORE_VERSIONS: dict[str, tuple[str, ...]] = {"horizontalpodautoscalers.autoscaling": ("v1",)}


def from_kind_info(info: KindInfo) -> ResourceType:
    return ResourceType(
        group=info.group,
        versions=(info.version, *_MORE_VERSIONS.get(info.group_resource, ())),
        kind=info.kind,
        plural=info.plural,
        singular=info.name_singular,
        namespaced=info.namespaced,
        short_names=info.short_names,
        categories=info.categories,
        subresources=info.subresources,
        field_labels=_FIELD_LABELS.get(info.plural, ()),
        returns_deleted=info.group_resource in _RETURNS_DELETED,
    )


def from_crd(crd: dict[str, Any]) -> ResourceType:
    """The type a CRD serves; raises ValueError naming the bad field."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        raise ValueError("spec: Required value")
    names = spec.get("names")
    if not isinstance(names, dict):
        raise ValueError("spec.names: Required value")
    group = spec.get("group")
    if not isinstance(group, str) or not group:
        raise ValueError("spec.group: Required value")
    plural = names.get("plural")
    kind = names.get("kind")
    if not isinstance(plural, str) or not plural:
        raise ValueError("spec.names.plural: Required value")
    if not isinstance(kind, str) or not kind:
        raise ValueError("spec.names.kind: Required value")
    scope = spec.get("scope", "Namespaced")
    if scope not in ("Namespaced", "Cluster"):
        raise ValueError(f'spec.scope: Unsupported value: "{scope}"')
    versions_raw = spec.get("versions") or []
    if not isinstance(versions_raw, list) or not versions_raw:
        raise ValueError(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
        )
    served: list[str] = []
    storage = ""
    subresources: tuple[str, ...] = ()
    columns: tuple[PrinterColumn, ...] = ()
    for i, v in enumerate(versions_raw):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str):
            raise ValueError(f"spec.versions[{i}].name: Required value")
        if v.get("storage"):
            storage = v["name"]
            subs = v.get("subresources") or {}
            subresources = tuple(s for s in ("status", "scale") if s in subs)
            columns = tuple(
                PrinterColumn(
                    name=str(c.get("name", "")),
                    type=str(c.get("type", "string")),
                    json_path=str(c.get("jsonPath", "")),
                    priority=_int(c.get("priority")),
                    description=str(c.get("description", "")),
                )
                for c in v.get("additionalPrinterColumns") or []
                if isinstance(c, dict)
            )
        if v.get("served", True):
            served.append(v["name"])
    if not storage:
        raise ValueError(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
        )
    ordered = tuple([storage] + [v for v in served if v != storage])
    return ResourceType(
        group=group,
        versions=ordered,
        kind=kind,
        plural=plural,
        singular=str(names.get("singular") or kind.lower()),
        namespaced=scope == "Namespaced",
        short_names=_strings(names.get("shortNames"), "spec.names.shortNames"),
        categories=_strings(names.get("categories"), "spec.names.categories"),
        subresources=subresources,
        builtin=False,
        printer_columns=columns,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _strings(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{field}: Invalid value: must be a list of strings")
    return tuple(value)


class ResourceTypes:
    """Lookup of served types by URL coordinates, updated as CRDs come and go."""

    def __init__(self) -> None:
        self._by_key: dict[str, ResourceType] = {}
        self._by_gvp: dict[tuple[str, str, str], ResourceType] = {}
        for info in BUILTIN_KINDS:
            self.add(from_kind_info(info))

    def add(self, rt: ResourceType) -> None:
        old = self._by_key.get(rt.key)
        if old is not None:
            for v in old.versions:
                self._by_gvp.pop((old.group, v, old.plural), None)
        self._by_key[rt.key] = rt
        for v in rt.versions:
            self._by_gvp[(rt.group, v, rt.plural)] = rt

    def remove(self, key: str) -> ResourceType | None:
        rt = self._by_key.pop(key, None)
        if rt is not None:
            for v in rt.versions:
                self._by_gvp.pop((rt.group, v, rt.plural), None)
        return rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvp.get((group, version, plural))

    def by_key(self, key: str) -> ResourceType | None:
        return self._by_key.get(key)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._by_key.values():
            if rt.kind == kind and rt.group == group and version in rt.versions:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        return list(self._by_key.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first (core group under "")."""
        out: dict[str, list[str]] = {}
        for rt in self._by_key.values():
            vs = out.setdefault(rt.group, [])
            for v in rt.versions:
                if v not in vs:
                    vs.append(v)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_key.values() if rt.group == group and version in rt.versions]
