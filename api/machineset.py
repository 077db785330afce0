"""Typed views of ``machine.sapcloud.io/v1alpha1`` MachineSet and MachineDeployment, spelled
as Gardener machine-controller-manager (MCM) puts them on the wire so its manifests, autoscaler
integration and tools work as-is.

Only what the MachineSet and MachineDeployment controllers read is modelled; writes are patches
(DESIGN §4), so fields left out here survive every write.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from kubetrio.api.machine import LastOperation, MachineSpec, TemplateMetadata
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.policy import LabelSelector
from kubetrio.api.registry import KindInfo, lookup

# -- annotations and labels MCM users and the cluster autoscaler rely on

# Lower value = deleted first when a set scales down; machines default to "3".
MACHINE_PRIORITY_ANNOTATION = "machinepriority.machine.sapcloud.io"
# Names of machines (``name~time,…``) the cluster autoscaler asks a deployment to remove.
TRIGGER_DELETION_BY_MCM_ANNOTATION = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
MARKED_FOR_DELETION_TIME_ANNOTATION = "machine.sapcloud.io/marked-for-deletion-time"
# Set on nodes during a rollout so the cluster autoscaler leaves them alone.
AUTOSCALER_SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
AUTOSCALER_SCALE_DOWN_DISABLED_BY_MCM_ANNOTATION = (
    "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"
)
AUTOSCALER_SCALE_DOWN_DISABLED_VALUE = "true"
# A deployment's MachineSets and their machines carry the hash of the template they came from.
MACHINE_TEMPLATE_HASH_LABEL = "machine-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"

# -- condition types and strategy types (MCM's strings)

MACHINE_SET_REPLICA_FAILURE = "ReplicaFailure"
MACHINE_SET_FROZEN = "Frozen"

MACHINE_DEPLOYMENT_AVAILABLE = "Available"
MACHINE_DEPLOYMENT_PROGRESSING = "Progressing"
MACHINE_DEPLOYMENT_REPLICA_FAILURE = "ReplicaFailure"
MACHINE_DEPLOYMENT_FROZEN = "Frozen"

STRATEGY_RECREATE = "Recreate"
STRATEGY_ROLLING_UPDATE = "RollingUpdate"


# -- shared pieces


class MachineTemplateSpec(Model, kw_only=True):
    """What a machine created from a set looks like: its labels/annotations and spec."""

    metadata: TemplateMetadata = msgspec.field(default_factory=TemplateMetadata)
    spec: MachineSpec = msgspec.field(default_factory=MachineSpec)


class MachineSummary(Model, kw_only=True):
    """One failed machine as a set or deployment reports it (``status.failedMachines``)."""

    name: str = ""
    provider_id: str = msgspec.field(default="", name="providerID")
    last_operation: LastOperation = msgspec.field(default_factory=LastOperation)
    owner_ref: str = ""


# -- MachineSet


class MachineSetSpec(Model, kw_only=True):
    replicas: int = 0
    selector: LabelSelector | None = None
    template: MachineTemplateSpec = msgspec.field(default_factory=MachineTemplateSpec)
    min_ready_seconds: int = 0


class MachineSetCondition(Model, kw_only=True):
    type: str
    status: str
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


class MachineSetStatus(Model, kw_only=True):
    replicas: int = 0
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    observed_generation: int = 0
    # MCM's wire name for a set's conditions (unlike the deployment's ``conditions``).
    conditions: tuple[MachineSetCondition, ...] = msgspec.field(
        default=(), name="machineSetCondition"
    )
    last_operation: LastOperation = msgspec.field(default_factory=LastOperation)
    failed_machines: tuple[MachineSummary, ...] | None = None


class MachineSet(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("machine.sapcloud.io/v1alpha1", "MachineSet")
    spec: MachineSetSpec = msgspec.field(default_factory=MachineSetSpec)
    status: MachineSetStatus = msgspec.field(default_factory=MachineSetStatus)

    def condition(self, condition_type: str) -> MachineSetCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)


# -- MachineDeployment


class RollingUpdateMachineDeployment(Model, kw_only=True):
    """Bounds of a rolling update: absolute counts or percentages ("25%") of replicas."""

    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class MachineDeploymentStrategy(Model, kw_only=True):
    type: str = ""
    rolling_update: RollingUpdateMachineDeployment | None = None


class RollbackConfig(Model, kw_only=True):
    """MCM's deprecated ``spec.rollbackTo``: revision 0 means the previous one."""

    revision: int = 0


class MachineDeploymentSpec(Model, kw_only=True):
    replicas: int = 0
    selector: LabelSelector | None = None
    template: MachineTemplateSpec = msgspec.field(default_factory=MachineTemplateSpec)
    strategy: MachineDeploymentStrategy = msgspec.field(default_factory=MachineDeploymentStrategy)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None
    paused: bool = False
    rollback_to: RollbackConfig | None = None
    progress_deadline_seconds: int | None = None


class MachineDeploymentCondition(Model, kw_only=True):
    type: str
    status: str
    last_update_time: str | None = None
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


class MachineDeploymentStatus(Model, kw_only=True):
    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    conditions: tuple[MachineDeploymentCondition, ...] = ()
    collision_count: int | None = None
    failed_machines: tuple[MachineSummary, ...] = ()


class MachineDeployment(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("machine.sapcloud.io/v1alpha1", "MachineDeployment")
    spec: MachineDeploymentSpec = msgspec.field(default_factory=MachineDeploymentSpec)
    status: MachineDeploymentStatus = msgspec.field(default_factory=MachineDeploymentStatus)

    def condition(self, condition_type: str) -> MachineDeploymentCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)
