"""Typed views of ``machine.sapcloud.io/v1alpha1`` MachineSet and MachineDeployment, spelled
as Gardener machine-controller-manager (MCM) puts them on the wire so its manifests, autoscaler
integration and tools work as-is.

Only what the MachineSet and MachineDeployment controllers read is modelled; writes are patches,
never a PUT of this partial view, so fields left out here survive every write.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from kubetrio.api.declare import resource
from kubetrio.api.machine import (
    GROUP,
    VERSION,
    ClassSpec,
    LastOperation,
    Machine,
    MachineClass,
    MachineSpec,
    TemplateMetadata,
)
from kubetrio.api.markers import Atomic, DateTime, Int32, Int64, PreserveUnknownFields
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.policy import LabelSelector
from kubetrio.api.registry import KindInfo, PrinterColumn, Scale

# -- annotations and labels MCM users and the cluster autoscaler rely on

# Lower value = deleted first when a set scales down; machines default to "3".
MACHINE_PRIORITY_ANNOTATION = "machinepriority.machine.sapcloud.io"
# Names of machines (``name~time,…``) the cluster autoscaler asks a deployment to remove.
TRIGGER_DELETION_BY_MCM_ANNOTATION = "node.machine.sapcloud.io/trigger-deletion-by-mcm"
MARKED_FOR_DELETION_TIME_ANNOTATION = "machine.sapcloud.io/marked-for-deletion-time"
# When the cluster autoscaler last changed a deployment's replicas (copied to its new set): a
# machine it marked for deletion by then goes even when the set has no surplus to remove.
LAST_SCALER_CHANGE_ANNOTATION = "machine.sapcloud.io/last-deployment-replica-change-by-scaler-time"
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
STRATEGY_IN_PLACE_UPDATE = "InPlaceUpdate"
ORCHESTRATION_AUTO = "Auto"
ORCHESTRATION_MANUAL = "Manual"
# On an old MachineSet during an in-place update: machines that move to the new set must not be
# replaced by the old one before its replicas are lowered.
LABEL_MACHINE_SET_SCALE_UP_DISABLED = "node.machine.sapcloud.io/scale-up-disabled"


# -- shared pieces


class MachineTemplateSpec(Model, kw_only=True):
    """The machines to create: their metadata and Machine spec."""

    # Partial on purpose: metadata beyond labels/annotations is kept, not pruned.
    metadata: Annotated[TemplateMetadata, PreserveUnknownFields] = msgspec.field(
        default_factory=TemplateMetadata
    )
    spec: Annotated[
        MachineSpec,
        msgspec.Meta(
            description="The spec of each machine created from this template (as a Machine's)."
        ),
    ] = msgspec.field(default_factory=MachineSpec)


Replicas = Annotated[Int32, msgspec.Meta(description="How many machines to keep.")]
Selector = Annotated[
    LabelSelector,
    Atomic,
    msgspec.Meta(
        description="Label query over the machines this object owns; it must match the "
        "template's labels."
    ),
]
MinReadySeconds = Annotated[
    Int32,
    msgspec.Meta(description="How long a machine must be ready before it counts as available."),
]
FailedMachines = Annotated[
    tuple["MachineSummary", ...],
    msgspec.Meta(description="The machines whose last operation failed."),
]


class MachineSummary(Model, kw_only=True):
    """One failed machine as a set or deployment reports it (``status.failedMachines``)."""

    name: str = ""
    provider_id: str = msgspec.field(default="", name="providerID")
    last_operation: LastOperation = msgspec.field(default_factory=LastOperation)
    owner_ref: str = ""


# -- MachineSet


AutoPreserveFailedMachineMax = Annotated[
    Int32,
    msgspec.Meta(
        description="How many Failed machines MCM preserves by itself (annotated "
        "node.machine.sapcloud.io/preserve=auto-preserved) at a time."
    ),
]


class MachineSetSpec(Model, kw_only=True):
    replicas: Replicas = 0
    auto_preserve_failed_machine_max: AutoPreserveFailedMachineMax = 0
    selector: Selector | None = None
    machine_class: (
        Annotated[
            ClassSpec,
            msgspec.Meta(description="Unused: the template's spec.class names the class."),
        ]
        | None
    ) = None
    template: MachineTemplateSpec = msgspec.field(default_factory=MachineTemplateSpec)
    min_ready_seconds: MinReadySeconds = 0


class MachineSetCondition(Model, kw_only=True):
    type: str
    status: str
    last_transition_time: DateTime | None = None
    reason: str = ""
    message: str = ""


class MachineSetStatus(Model, kw_only=True):
    replicas: Int32 = 0
    fully_labeled_replicas: Int32 = 0
    ready_replicas: Int32 = 0
    available_replicas: Int32 = 0
    preserved_failed_replicas: Int32 = 0
    observed_generation: Int64 = 0
    # MCM's wire name for a set's conditions (unlike the deployment's ``conditions``).
    conditions: tuple[MachineSetCondition, ...] = msgspec.field(
        default=(), name="machineSetCondition"
    )
    last_operation: LastOperation = msgspec.field(default_factory=LastOperation)
    failed_machines: FailedMachines | None = None
    auto_preserve_failed_machine_count: Int32 = 0


REPLICAS_SCALE = Scale(".spec.replicas", ".status.replicas")


@resource(
    group=GROUP,
    version=VERSION,
    short_names=("mcs",),
    status=True,
    scale=REPLICAS_SCALE,
    printer_columns=(
        PrinterColumn("Desired", ".spec.replicas", type="integer", description="Desired machines."),
        PrinterColumn(
            "Current", ".status.replicas", type="integer", description="Machines the set has."
        ),
        PrinterColumn(
            "Ready",
            ".status.readyReplicas",
            type="integer",
            description="Machines whose node is ready.",
        ),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
)
class MachineSet(KubeObject, kw_only=True):
    """Keeps a number of identical machines running, replacing failed ones."""

    spec: MachineSetSpec = msgspec.field(default_factory=MachineSetSpec)
    status: MachineSetStatus = msgspec.field(default_factory=MachineSetStatus)

    def condition(self, condition_type: str) -> MachineSetCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)


# -- MachineDeployment


class RollingUpdateMachineDeployment(Model, kw_only=True):
    """Bounds of a rolling update: absolute counts or percentages ("25%") of replicas."""

    max_unavailable: (
        Annotated[
            int | str,
            msgspec.Meta(
                description="Machines allowed to be unavailable during an update: a count or a "
                "percentage (rounded down)."
            ),
        ]
        | None
    ) = None
    max_surge: (
        Annotated[
            int | str,
            msgspec.Meta(
                description="Machines allowed above replicas during an update: a count or a "
                "percentage (rounded up)."
            ),
        ]
        | None
    ) = None


class InPlaceUpdateMachineDeployment(RollingUpdateMachineDeployment, kw_only=True):
    """Bounds of an in-place update, and who picks the machines to update."""

    orchestration_type: Annotated[
        str,
        msgspec.Meta(
            description="Auto: the controller selects machines within maxUnavailable; Manual: "
            "the user labels nodes node.machine.sapcloud.io/selected-for-update."
        ),
    ] = ""


class MachineDeploymentStrategy(Model, kw_only=True):
    """How machines are replaced when the template changes."""

    type: Annotated[
        str,
        msgspec.Meta(
            description="RollingUpdate (the default), Recreate, or InPlaceUpdate (machines are "
            "updated where they run and move to the new MachineSet)."
        ),
    ] = ""
    rolling_update: RollingUpdateMachineDeployment | None = None
    in_place_update: InPlaceUpdateMachineDeployment | None = None


class RollbackConfig(Model, kw_only=True):
    """Deprecated: the revision to roll back to (0 for the previous one); cleared once done."""

    revision: Int64 = 0


class MachineDeploymentSpec(Model, kw_only=True):
    replicas: Replicas = 0
    auto_preserve_failed_machine_max: AutoPreserveFailedMachineMax = 0
    selector: Selector | None = None
    template: MachineTemplateSpec = msgspec.field(default_factory=MachineTemplateSpec)
    strategy: MachineDeploymentStrategy = msgspec.field(default_factory=MachineDeploymentStrategy)
    min_ready_seconds: MinReadySeconds = 0
    revision_history_limit: (
        Annotated[Int32, msgspec.Meta(description="How many old MachineSets to keep for rollback.")]
        | None
    ) = None
    paused: bool = False
    rollback_to: RollbackConfig | None = None
    progress_deadline_seconds: (
        Annotated[
            Int32,
            msgspec.Meta(
                description="Seconds without progress after which the rollout is reported as "
                "failed."
            ),
        ]
        | None
    ) = None


class MachineDeploymentCondition(Model, kw_only=True):
    type: str
    status: str
    last_update_time: DateTime | None = None
    last_transition_time: DateTime | None = None
    reason: str = ""
    message: str = ""


class MachineDeploymentStatus(Model, kw_only=True):
    observed_generation: Int64 = 0
    replicas: Int32 = 0
    updated_replicas: Int32 = 0
    ready_replicas: Int32 = 0
    available_replicas: Int32 = 0
    unavailable_replicas: Int32 = 0
    preserved_failed_replicas: Int32 = 0
    conditions: tuple[MachineDeploymentCondition, ...] = ()
    collision_count: Int32 | None = None
    failed_machines: FailedMachines = ()


@resource(
    group=GROUP,
    version=VERSION,
    short_names=("mcd",),
    status=True,
    scale=REPLICAS_SCALE,
    printer_columns=(
        PrinterColumn(
            "Ready",
            ".status.readyReplicas",
            type="integer",
            description="Ready machines of the deployment.",
        ),
        PrinterColumn("Desired", ".spec.replicas", type="integer", description="Desired machines."),
        PrinterColumn(
            "Up-to-date",
            ".status.updatedReplicas",
            type="integer",
            description="Machines built from the current template.",
        ),
        PrinterColumn(
            "Available",
            ".status.availableReplicas",
            type="integer",
            description="Machines ready for at least minReadySeconds.",
        ),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
)
class MachineDeployment(KubeObject, kw_only=True):
    """Rolls a pool of machines from one template to the next through MachineSets."""

    spec: MachineDeploymentSpec = msgspec.field(default_factory=MachineDeploymentSpec)
    status: MachineDeploymentStatus = msgspec.field(default_factory=MachineDeploymentStatus)

    def condition(self, condition_type: str) -> MachineDeploymentCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)


# The machine.sapcloud.io kinds kubetrio ships CRDs for (``kubetrio crds``).
MACHINE_KINDS: tuple[KindInfo, ...] = (
    Machine.KIND,
    MachineClass.KIND,
    MachineSet.KIND,
    MachineDeployment.KIND,
)
