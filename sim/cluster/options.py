"""What the simulated cluster does and how fast: one frozen dataclass, every field defaulted, so a
test switches on exactly the behaviours it exercises and sets delays on its own (mock) clock."""

from __future__ import annotations

from dataclasses import dataclass

SIM_CSI_DRIVER = "sim.csi.kubetrio.io"
# A node with this annotation set to "true" never gets a Ready condition from the kubelet: the
# stand-in for a machine whose kubelet never comes up (MCM's health checks act on those).
NEVER_READY_ANNOTATION = "sim.kubetrio.io/never-ready"
# A node with this annotation fails its in-place update; the value is the reason it reports.
IN_PLACE_UPDATE_FAILS_ANNOTATION = "sim.kubetrio.io/in-place-update-fails"


@dataclass(frozen=True, slots=True)
class ClusterSimulation:
    """Options of the simulated cluster (``serve_world(simulate=ClusterSimulation(...))``).

    Delays are seconds on the emulator's trio clock. ``grace_factor`` scales every pod's
    termination grace period (0.1: a 30 s grace ends after 3 s). ``storage_classes`` are the
    classes the dynamic provisioner serves (``""``: claims that name no class).
    """

    kubelet: bool = True
    scheduler: bool = True
    attach_detach: bool = True
    provisioner: bool = True
    replicasets: bool = True
    statefulsets: bool = True
    daemonsets: bool = True
    deployments: bool = True
    disruption: bool = True
    node_lifecycle: bool = True
    in_place_update_agent: bool = True
    pod_start_delay: float = 0.0
    grace_factor: float = 1.0
    attach_delay: float = 0.0
    detach_delay: float = 0.0
    in_place_update_delay: float = 30.0  # how long the node agent's in-place update takes
    csi_driver: str = SIM_CSI_DRIVER
    storage_classes: tuple[str, ...] = ("", "standard", "sim-csi")

    @classmethod
    def realistic(cls) -> ClusterSimulation:
        """Everything on, with small delays that still show each phase (``--simulate``)."""
        return cls(
            pod_start_delay=1.0,
            grace_factor=0.1,
            attach_delay=2.0,
            detach_delay=3.0,
            in_place_update_delay=2.0,
        )
