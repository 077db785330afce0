"""Which pods hold volumes a drain must see detached (and re-attached elsewhere).

PVC → PV → volume ID, with the ID coming from the cloud driver so only volumes it owns count.
Names and IDs stay paired by PV name (MCM once paired two lists by position, #937), and a PV
used by more than one pod on the node is dropped: its detach cannot be attributed to one pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from kubetrio.api.core import PersistentVolume, PersistentVolumeClaim, Pod
from kubetrio.runtime.cache.store import Lister

# The driver's answer for the PVs it owns: PV name -> volume ID; PVs it does not own are absent.
VolumeIdResolver = Callable[[Sequence[PersistentVolume]], Awaitable[Mapping[str, str]]]


@dataclass(frozen=True, slots=True)
class PodVolumes:
    pod: Pod
    volumes: tuple[tuple[str, str], ...]  # (PV name, volume ID), owned by the driver

    @property
    def priority(self) -> int:
        return self.pod.spec.priority or 0


def claimed_volumes(
    pod: Pod,
    claims: Lister[PersistentVolumeClaim],
) -> list[str]:
    """Names of the bound PVs behind ``pod``'s claims (unbound or missing claims are skipped)."""
    names = []
    for volume in pod.spec.volumes:
        source = volume.persistent_volume_claim
        if source is None:
            continue
        claim = claims.get(pod.metadata.namespace, source.claim_name)
        if claim is not None and claim.spec.volume_name:
            names.append(claim.spec.volume_name)
    return names


async def pods_with_volumes(
    pods: Sequence[Pod],
    claims: Lister[PersistentVolumeClaim],
    volumes: Lister[PersistentVolume],
    resolve: VolumeIdResolver,
) -> tuple[list[PodVolumes], list[Pod]]:
    """Split ``pods`` into those holding driver-owned exclusive volumes (highest priority
    first, the order MCM evicts them in) and the rest."""
    per_pod = {id(pod): claimed_volumes(pod, claims) for pod in pods}
    users = Counter(name for names in per_pod.values() for name in set(names))
    exclusive = {name for name, count in users.items() if count == 1}
    specs = [pv for name in sorted(exclusive) if (pv := volumes.get("", name)) is not None]
    owned = await resolve(specs) if specs else {}
    with_volumes: list[PodVolumes] = []
    without: list[Pod] = []
    for pod in pods:
        pairs = tuple((name, owned[name]) for name in per_pod[id(pod)] if name in owned)
        if pairs:
            with_volumes.append(PodVolumes(pod, pairs))
        else:
            without.append(pod)
    with_volumes.sort(key=lambda entry: -entry.priority)  # stable: equal priorities keep order
    return with_volumes, without
