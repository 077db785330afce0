"""storage.k8s.io/v1 VolumeAttachment: which node a CSI volume is attached to."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import KindInfo, lookup


class VolumeAttachmentSource(Model, kw_only=True):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(Model, kw_only=True):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachmentStatus(Model, kw_only=True):
    attached: bool = False


class VolumeAttachment(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("storage.k8s.io/v1", "VolumeAttachment")
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = msgspec.field(default_factory=VolumeAttachmentStatus)
