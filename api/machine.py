"""Typed views of ``machine.sapcloud.io/v1alpha1`` Machine and MachineClass, as Gardener
machine-controller-manager (MCM) spells them on the wire, so its manifests and tools work as-is.

Only what the machine controller reads is modelled; writes are patches, so the fields left out
here (other tools', newer MCM versions') survive every write. A
MachineClass's ``providerSpec`` is an opaque dict because each driver defines its own shape.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from kubetrio.api.core import Taint
from kubetrio.api.declare import resource
from kubetrio.api.markers import DateTime, Int32, PreserveUnknownFields, Quantity, SchemaOf
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import PrinterColumn

GROUP = "machine.sapcloud.io"
VERSION = "v1alpha1"

# -- phases and last-operation vocabulary (MCM's names: tools and dashboards match on them)

# On a MachineDeployment (copied to its MachineSets and their new Machines): the creation
# timeout of its machines, a Go duration that wins over the template's and the flag's.
EFFECTIVE_CREATION_TIMEOUT_ANNOTATION = "node.machine.sapcloud.io/effective-creation-timeout"

PHASE_PENDING = "Pending"
PHASE_AVAILABLE = "Available"
PHASE_RUNNING = "Running"
PHASE_TERMINATING = "Terminating"
PHASE_UNKNOWN = "Unknown"
PHASE_FAILED = "Failed"
PHASE_CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
# An in-place update (MCM's GEP-31): the node drained and handed to the update agent, then
# the agent's verdict.
PHASE_IN_PLACE_UPDATING = "InPlaceUpdating"
PHASE_IN_PLACE_UPDATE_SUCCESSFUL = "InPlaceUpdateSuccessful"
PHASE_IN_PLACE_UPDATE_FAILED = "InPlaceUpdateFailed"
PHASES = (
    PHASE_PENDING,
    PHASE_AVAILABLE,
    PHASE_RUNNING,
    PHASE_TERMINATING,
    PHASE_UNKNOWN,
    PHASE_FAILED,
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_IN_PLACE_UPDATING,
    PHASE_IN_PLACE_UPDATE_SUCCESSFUL,
    PHASE_IN_PLACE_UPDATE_FAILED,
)

STATE_PROCESSING = "Processing"
STATE_FAILED = "Failed"
STATE_SUCCESSFUL = "Successful"

OPERATION_CREATE = "Create"
OPERATION_UPDATE = "Update"
OPERATION_HEALTH_CHECK = "HealthCheck"
OPERATION_DELETE = "Delete"
OPERATION_IN_PLACE_UPDATE = "InPlaceUpdate"

# -- in-place updates: how MCM and the node's update agent talk through the Node

# Node labels: MCM marks every node of an old MachineSet a candidate, then selects some (Auto)
# or leaves the selection to the user (Manual); the agent reports with the result label.
LABEL_NODE_CANDIDATE_FOR_UPDATE = "node.machine.sapcloud.io/candidate-for-update"
LABEL_NODE_SELECTED_FOR_UPDATE = "node.machine.sapcloud.io/selected-for-update"
LABEL_NODE_UPDATE_RESULT = "node.machine.sapcloud.io/update-result"
LABEL_VALUE_NODE_UPDATE_SUCCESSFUL = "successful"
LABEL_VALUE_NODE_UPDATE_FAILED = "failed"
# Node annotation: why the agent's update failed (copied into the condition's message).
ANNOTATION_MACHINE_UPDATE_FAILED_REASON = "node.machine.sapcloud.io/update-failed-reason"
# The node condition MCM keeps (and copies onto the Machine) and its reasons, in order.
NODE_IN_PLACE_UPDATE = "InPlaceUpdate"
CANDIDATE_FOR_UPDATE = "CandidateForUpdate"
SELECTED_FOR_UPDATE = "SelectedForUpdate"
DRAIN_SUCCESSFUL = "DrainSuccessful"
READY_FOR_UPDATE = "ReadyForUpdate"
UPDATE_SUCCESSFUL = "UpdateSuccessful"
UPDATE_FAILED = "UpdateFailed"


# -- preservation: a machine kept (with its VM and node) for diagnosis instead of replaced

# On the Node (preferred) or the Machine: now, when-failed, or false (never auto-preserve);
# MCM itself writes auto-preserved.
PRESERVE_ANNOTATION = "node.machine.sapcloud.io/preserve"
PRESERVE_NOW = "now"
PRESERVE_WHEN_FAILED = "when-failed"
PRESERVE_AUTO_PRESERVED = "auto-preserved"
PRESERVE_FALSE = "false"
PRESERVE_VALUES = frozenset(
    {PRESERVE_NOW, PRESERVE_WHEN_FAILED, PRESERVE_AUTO_PRESERVED, PRESERVE_FALSE}
)
# On the Machine: the node's value MCM last applied (the node's word wins over the machine's).
LAST_APPLIED_NODE_PRESERVE_VALUE_ANNOTATION = (
    "node.machine.sapcloud.io/last-applied-node-preserve-value"
)
# NoSchedule taint on a preserved Failed machine's node (not a cordon: a user's stays theirs).
NODE_PRESERVED_TAINT = "node.machine.sapcloud.io/preserved"
NODE_PRESERVED = "Preserved"
PRESERVED_BY_MCM = "Preserved by MCM."
PRESERVED_BY_USER = "Preserved by user."
PRESERVATION_STOPPED = "Preservation stopped."
PRESERVED_NODE_DRAIN_SUCCESSFUL = "Preserved node drained successfully."
PRESERVED_NODE_DRAIN_UNSUCCESSFUL = "Preserved node could not be drained."


# -- durations

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float:
    """Seconds in a Go ``time.Duration`` string ("2h", "30m", "1h30m", "90s", "0").

    MCM's ``metav1.Duration`` fields use Go's syntax, so manifests written for MCM must parse
    the same here. ValueError names the input when it is not a duration.
    """
    value = text.strip()
    sign = 1.0
    if value[:1] in "+-" and value:
        sign = -1.0 if value[0] == "-" else 1.0
        value = value[1:]
    if value == "0":
        return 0.0
    if not value:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    for match in _DURATION_PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(value):
        raise ValueError(f"invalid duration {text!r}")
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's rendering for whole seconds ("2h0m0s", "30m0s", "1m30s"), as kubectl shows them."""
    whole = int(seconds)
    hours, rest = divmod(abs(whole), 3600)
    minutes, secs = divmod(rest, 60)
    sign = "-" if whole < 0 else ""
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


# -- shared pieces


class ClassSpec(Model, kw_only=True):
    """The MachineClass this machine is created from."""

    api_group: str = ""
    kind: str = ""
    name: str = ""


class TemplateMetadata(Model, kw_only=True):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class NodeTemplateSpec(Model, kw_only=True):
    taints: tuple[Taint, ...] = ()


class NodeTemplate(Model, kw_only=True):
    """Labels, annotations and taints kept in sync on the machine's Node."""

    metadata: TemplateMetadata = msgspec.field(default_factory=TemplateMetadata)
    spec: NodeTemplateSpec = msgspec.field(default_factory=NodeTemplateSpec)


GoDuration = Annotated[str, msgspec.Meta(description="A Go duration such as 2h, 30m or 90s.")]


class MachineConfiguration(Model, kw_only=True):
    """Per-machine overrides of the controller's safety options."""

    drain_timeout: GoDuration | None = None
    health_timeout: GoDuration | None = None
    creation_timeout: GoDuration | None = None
    in_place_update_timeout: (
        Annotated[
            GoDuration,
            msgspec.Meta(description="How long an in-place update may take before it failed."),
        ]
        | None
    ) = None
    machine_preserve_timeout: (
        Annotated[
            GoDuration,
            msgspec.Meta(description="How long a preserved machine is kept (from preservation)."),
        ]
        | None
    ) = None
    max_evict_retries: Int32 | None = None
    node_conditions: (
        Annotated[
            str,
            msgspec.Meta(
                description="Comma-separated node condition types that make a machine unhealthy."
            ),
        ]
        | None
    ) = None

    def node_condition_types(self) -> tuple[str, ...] | None:
        """The comma-separated ``nodeConditions`` as a tuple, or None when not overridden."""
        if self.node_conditions is None:
            return None
        return tuple(part.strip() for part in self.node_conditions.split(",") if part.strip())


# -- Machine


class MachineSpec(Model, kw_only=True):
    class_: ClassSpec = msgspec.field(default_factory=ClassSpec, name="class")
    provider_id: Annotated[
        str, msgspec.Meta(description="The provider's ID of the VM, set once it exists.")
    ] = msgspec.field(default="", name="providerID")
    node_template: NodeTemplate | None = None
    machine_configuration: MachineConfiguration | None = None


class CurrentStatus(Model, kw_only=True):
    phase: str = ""
    timeout_active: bool = False
    last_update_time: DateTime | None = None
    preserve_expiry_time: (
        Annotated[
            DateTime,
            msgspec.Meta(description="Until when the machine is preserved (unset: it is not)."),
        ]
        | None
    ) = None


class LastOperation(Model, kw_only=True):
    description: str = ""
    state: str = ""
    type: str = ""
    last_update_time: DateTime | None = None
    error_code: str = ""


class MachineCondition(Model, kw_only=True):
    """A node condition as copied onto the machine."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: DateTime | None = None
    last_heartbeat_time: DateTime | None = None


class MachineStatus(Model, kw_only=True):
    current_status: CurrentStatus = msgspec.field(default_factory=CurrentStatus)
    last_operation: LastOperation = msgspec.field(default_factory=LastOperation)
    conditions: tuple[MachineCondition, ...] = ()
    last_known_state: str = ""
    node: str = ""


@resource(
    group=GROUP,
    version=VERSION,
    short_names=("mach",),
    status=True,
    printer_columns=(
        PrinterColumn("Status", ".status.currentStatus.phase", description="The machine's phase."),
        PrinterColumn("Node", ".metadata.labels.node", priority=1),
        PrinterColumn("ProviderID", ".spec.providerID", priority=1),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
)
class Machine(KubeObject, kw_only=True):
    """A virtual machine that joins the cluster as one Node."""

    spec: MachineSpec = msgspec.field(default_factory=MachineSpec)
    status: MachineStatus = msgspec.field(default_factory=MachineStatus)

    @property
    def phase(self) -> str:
        return self.status.current_status.phase

    def condition(self, condition_type: str) -> MachineCondition | None:
        return next((c for c in self.status.conditions if c.type == condition_type), None)


# -- MachineClass


class SecretReference(Model, kw_only=True):
    name: str = ""
    namespace: str = ""


class ClassNodeTemplate(Model, kw_only=True):
    """The node a machine of this class becomes (MCM's NodeTemplate), for autoscalers scaling
    from zero and for the driver."""

    # Quantities stay as written (int or string, as resource.Quantity accepts).
    capacity: Annotated[
        dict[str, Quantity],
        msgspec.Meta(description="The node's resources; MCM requires cpu, gpu and memory."),
    ] = {}
    virtual_capacity: Annotated[
        dict[str, Quantity],
        msgspec.Meta(description="Expected virtual extended resources of the node."),
    ] = {}
    instance_type: str = ""
    region: str = ""
    zone: str = ""
    architecture: str | None = None


@resource(
    group=GROUP,
    version=VERSION,
    short_names=("machcls",),
    printer_columns=(
        PrinterColumn("Provider", ".provider"),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
)
class MachineClass(KubeObject, kw_only=True):
    """Provider settings shared by the machines created from it."""

    # provider_spec belongs to the named driver. node_template is kept as written
    # (ClassNodeTemplate is its typed form), so a bad one is reported on the machines of the
    # class instead of hiding the whole class; the CRD still describes it by that form.
    provider: Annotated[
        str,
        msgspec.Meta(
            description="The driver that creates machines of this class (for example sim)."
        ),
    ] = ""
    provider_spec: Annotated[
        dict[str, Any],
        msgspec.Meta(description="Driver-specific settings, passed to the driver as-is."),
    ] = {}
    secret_ref: SecretReference | None = None
    credentials_secret_ref: SecretReference | None = None
    node_template: (
        Annotated[
            dict[str, Any],
            SchemaOf(ClassNodeTemplate, required=("capacity", "instanceType", "region", "zone")),
            PreserveUnknownFields,
        ]
        | None
    ) = None
