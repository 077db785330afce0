"""The simulated cluster behind the emulator: what a real cluster's nodes and controllers do, so
controllers see nodes join, pods run and volumes attach without one. Kubelets, scheduler,
attach/detach, dynamic provisioning, Deployment/ReplicaSet/StatefulSet/DaemonSet controllers,
the disruption controller and the node lifecycle controller's taints, as small level-triggered
controllers writing through the store (so watches see ordinary events) on the emulator's trio clock.

``serve_world(simulate=ClusterSimulation(...))`` runs it in-process; ``kubetrio emulator
--simulate`` runs ``ClusterSimulation.realistic()``.
"""

from kubetrio.sim.cluster.options import (
    NEVER_READY_ANNOTATION,
    SIM_CSI_DRIVER,
    ClusterSimulation,
)
from kubetrio.sim.cluster.simulation import SimulatedCluster

__all__ = ["NEVER_READY_ANNOTATION", "SIM_CSI_DRIVER", "ClusterSimulation", "SimulatedCluster"]
