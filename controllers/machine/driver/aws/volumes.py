"""The EBS volume IDs of PersistentVolumes, as provider-aws's ``GetVolumeIDs`` finds them: the
in-tree ``awsElasticBlockStore`` source (its ``aws://<zone>/vol-…`` form or a bare ID) and the
EBS CSI driver's volume handle. The drain waits for these volumes to detach."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from kubetrio.api.core import PersistentVolume

EBS_CSI_DRIVER = "ebs.csi.aws.com"
_VOLUME_ID = re.compile(r"^vol-[^/]*$")


def ebs_volume_id(kubernetes_id: str) -> str | None:
    """The EBS ID in a Kubernetes volume ID (``aws://zone/vol-1``, ``aws:///vol-1``,
    ``vol-1``); None for one that is not an EBS volume's."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        path = urlsplit(kubernetes_id).path
    except ValueError:
        return None
    volume = path.strip("/")
    return volume if _VOLUME_ID.match(volume) else None


def volume_ids(pvs: Sequence[PersistentVolume]) -> dict[str, str]:
    """PV name -> EBS volume ID, for the PVs on EBS; the others are left out."""
    found: dict[str, str] = {}
    for pv in pvs:
        ebs, csi = pv.spec.aws_elastic_block_store, pv.spec.csi
        if ebs is not None:
            volume = ebs_volume_id(ebs.volume_id)
            if volume is not None:
                found[pv.name] = volume
        elif csi is not None and csi.driver == EBS_CSI_DRIVER and csi.volume_handle:
            found[pv.name] = csi.volume_handle
    return found
