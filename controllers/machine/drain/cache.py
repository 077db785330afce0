"""The cached views a drain reads, from the manager's shared informers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubetrio.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from kubetrio.api.policy import PodDisruptionBudget
from kubetrio.api.storage import VolumeAttachment
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.cache.store import Lister

POD_NODE_INDEX = "spec.nodeName"
ATTACHMENT_PV_INDEX = "spec.source.persistentVolumeName"


def pod_node(pod: Pod) -> Iterable[str]:
    return (pod.spec.node_name,) if pod.spec.node_name else ()


def attachment_volume(attachment: VolumeAttachment) -> Iterable[str]:
    name = attachment.spec.source.persistent_volume_name
    return (name,) if name else ()


@dataclass(frozen=True, slots=True)
class DrainCache:
    nodes: Lister[Node]
    pods: Lister[Pod]
    claims: Lister[PersistentVolumeClaim]
    volumes: Lister[PersistentVolume]
    attachments: Lister[VolumeAttachment]
    budgets: Lister[PodDisruptionBudget]
    node_changes: InformerChanges
    pod_changes: InformerChanges
    attachment_changes: InformerChanges
    # The last resourceVersion the pod informer has seen (a drain compares it with a list's).
    pods_version: Callable[[], str]

    @classmethod
    def from_cache(cls, cache: InformerCache) -> DrainCache:
        """Register the informers and indexes a drain needs (call before the manager runs)."""
        nodes = cache.informer(Node)
        pods = cache.informer(Pod)
        attachments = cache.informer(VolumeAttachment)
        pods.add_index(POD_NODE_INDEX, pod_node)
        attachments.add_index(ATTACHMENT_PV_INDEX, attachment_volume)
        return cls(
            nodes=nodes.lister,
            pods=pods.lister,
            claims=cache.informer(PersistentVolumeClaim).lister,
            volumes=cache.informer(PersistentVolume).lister,
            attachments=attachments.lister,
            budgets=cache.informer(PodDisruptionBudget).lister,
            node_changes=InformerChanges.of(nodes),
            pod_changes=InformerChanges.of(pods),
            attachment_changes=InformerChanges.of(attachments),
            pods_version=lambda: pods.last_resource_version,
        )

    def pods_on(self, node: str) -> list[Pod]:
        return self.pods.by_index(POD_NODE_INDEX, node)
