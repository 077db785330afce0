"""Narrow typed views of the core/v1 kinds kubetrio uses."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from kubetrio.api.markers import DateTime
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import KindInfo, lookup


class Namespace(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "Namespace")


class Taint(Model, kw_only=True):
    key: str
    effect: str
    value: str = ""
    time_added: DateTime | None = None


class NodeSpec(Model, kw_only=True):
    provider_id: str = msgspec.field(default="", name="providerID")
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


class NodeCondition(Model, kw_only=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    last_heartbeat_time: str | None = None


class AttachedVolume(Model, kw_only=True):
    name: str
    device_path: str = ""


class NodeStatus(Model, kw_only=True):
    conditions: tuple[NodeCondition, ...] = ()
    volumes_attached: tuple[AttachedVolume, ...] = ()
    volumes_in_use: tuple[str, ...] = ()
    capacity: dict[str, str] = {}


class Node(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "Node")
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)

    def condition(self, condition_type: str) -> NodeCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)


class PersistentVolumeClaimSource(Model, kw_only=True):
    claim_name: str
    read_only: bool = False


class Volume(Model, kw_only=True):
    name: str
    persistent_volume_claim: PersistentVolumeClaimSource | None = None
    # Only presence matters (drain treats emptyDir data as lost), so the body stays opaque.
    empty_dir: dict[str, object] | None = None


class PodSpec(Model, kw_only=True):
    node_name: str = ""
    volumes: tuple[Volume, ...] = ()
    priority: int | None = None
    termination_grace_period_seconds: int | None = None


# Kubelet marks static (mirror) pods with this annotation; drain must skip them.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
POD_ANNOTATIONS_KEPT = (MIRROR_POD_ANNOTATION,)


class PodStatus(Model, kw_only=True):
    phase: str = ""


class Pod(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "Pod")
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    def __post_init__(self) -> None:
        # Every cached pod costs memory, so the view keeps only what kubetrio acts on: claim
        # and emptyDir volumes (drain), and the mirror-pod annotation. A controller that needs
        # more of a pod declares its own view of the kind (any KubeObject with KIND = Pod).
        volumes = self.spec.volumes
        if volumes:
            self.spec.volumes = tuple(
                v
                for v in volumes
                if v.persistent_volume_claim is not None or v.empty_dir is not None
            )
        annotations = self.metadata.annotations
        if annotations:
            self.metadata.annotations = {
                k: annotations[k] for k in POD_ANNOTATIONS_KEPT if k in annotations
            }


class CSIPersistentVolumeSource(Model, kw_only=True):
    driver: str
    volume_handle: str


class AWSElasticBlockStoreVolumeSource(Model, kw_only=True):
    volume_id: str = msgspec.field(name="volumeID")


class ObjectReference(Model, kw_only=True):
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""


class PersistentVolumeSpec(Model, kw_only=True):
    csi: CSIPersistentVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""


class PersistentVolume(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "PersistentVolume")
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)


class PersistentVolumeClaimSpec(Model, kw_only=True):
    volume_name: str = ""


class PersistentVolumeClaim(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "PersistentVolumeClaim")
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class Secret(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "Secret")
    type: str = ""
    # Base64 as on the wire; never logged (see kubetrio.runtime.util.log's redaction).
    data: dict[str, str] = {}
    string_data: dict[str, str] = {}


class EventSource(Model, kw_only=True):
    component: str = ""
    host: str = ""


class Event(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "Event")
    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    reason: str = ""
    message: str = ""
    type: str = ""
    count: int = 0
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    source: EventSource = msgspec.field(default_factory=EventSource)
    reporting_component: str = ""
    reporting_instance: str = ""


class ConfigMap(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("v1", "ConfigMap")
    data: dict[str, str] = {}
