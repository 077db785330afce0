"""Which pods a drain removes, and which it leaves (MCM's filters, kubectl drain's words).

Run with MCM's fixed choices: ignore DaemonSet pods, include unmanaged pods and pods with local
(emptyDir) data with a warning, always include finished pods, never touch mirror pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubetrio.api.core import MIRROR_POD_ANNOTATION, Pod

FINISHED_PHASES = ("Succeeded", "Failed")


@dataclass(slots=True)
class PodSelection:
    remove: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def pod_name(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def select_pods(pods: Iterable[Pod]) -> PodSelection:
    """Split the pods of a node into those to remove and those to leave, with reasons."""
    selection = PodSelection()
    for pod in sorted(pods, key=pod_name):
        if MIRROR_POD_ANNOTATION in pod.metadata.annotations:
            selection.skipped.append((pod, "mirror pod (managed by the kubelet)"))
            continue
        owner = pod.metadata.controller_ref()
        finished = pod.status.phase in FINISHED_PHASES
        if owner is not None and owner.kind == "DaemonSet" and not finished:
            selection.skipped.append((pod, f"DaemonSet-managed ({owner.name})"))
            continue
        if owner is None and not finished:
            selection.warnings.append(f"deleting pod {pod_name(pod)}: not managed by a controller")
        if any(volume.empty_dir is not None for volume in pod.spec.volumes) and not finished:
            selection.warnings.append(f"deleting pod {pod_name(pod)}: its emptyDir data is lost")
        selection.remove.append(pod)
    return selection
