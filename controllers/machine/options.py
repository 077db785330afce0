"""The machine controllers' options (the ``machine`` section of the manager's configuration) and
a machine's own overrides of them.

One definition for the machine, machineset, machinedeployment and safety controllers: MCM's
safety options with MCM's defaults, so a manager configured like MCM behaves like it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec

from kubetrio.api.machine import (
    EFFECTIVE_CREATION_TIMEOUT_ANNOTATION,
    Machine,
    MachineConfiguration,
    parse_duration,
)
from kubetrio.runtime.util.duration import Duration
from kubetrio.runtime.util.options import Name, Names, NonNegativeInt, Options

__all__ = [
    "EVICTION_RETRY_INTERVAL",
    "FORCE_DRAIN_TIMEOUT",
    "UNHEALTHY_NODE_FORCE_AFTER",
    "MachineOptions",
]

# MCM evicts every 20 s until the drain timeout, so retries beyond timeout / 20 s never happen.
EVICTION_RETRY_INTERVAL = 20.0
# A force drain gets this long and one eviction attempt (MCM's numbers).
FORCE_DRAIN_TIMEOUT = 60.0
# A node NotReady (or read-only) for this long is not drained gently: its kubelet cannot act.
UNHEALTHY_NODE_FORCE_AFTER = 300.0


class MachineOptions(Options, kw_only=True, frozen=True):
    """MCM's safety options, with MCM's defaults (the command line keeps MCM's flag names)."""

    namespace: Name = "default"
    creation_timeout: Duration = Duration(20 * 60)
    health_timeout: Duration = Duration(10 * 60)
    drain_timeout: Duration = Duration(2 * 3600)
    # MCM's --machine-inplace-update-timeout: an in-place update not done by then has failed.
    in_place_update_timeout: Duration = Duration(20 * 60)
    # MCM's --machine-preserve-timeout: how long a preserved machine is kept.
    machine_preserve_timeout: Duration = Duration(96 * 3600)
    # MCM's --resource-exhausted-retry: a provider out of capacity (ResourceExhausted) is asked
    # again after this, not at the usual pace of a failed creation.
    resource_exhausted_retry: Duration = Duration(600)
    max_evict_retries: NonNegativeInt = 360
    pv_detach_timeout: Duration = Duration(2 * 60)
    pv_reattach_timeout: Duration = Duration(90)
    node_conditions: Names = (
        "KernelDeadlock",
        "ReadonlyFilesystem",
        "DiskPressure",
        "NetworkUnavailable",
    )
    safety_orphan_vms_period: Duration = msgspec.field(
        default=Duration(15 * 60), name="safetyOrphanVMsPeriod"
    )
    safety_apiserver_status_check_period: Duration = msgspec.field(
        default=Duration(60), name="safetyAPIServerStatusCheckPeriod"
    )
    safety_apiserver_status_check_timeout: Duration = msgspec.field(
        default=Duration(30), name="safetyAPIServerStatusCheckTimeout"
    )
    # MCM's overshooting guard of MachineSets (the `safety` controller).
    safety_up: NonNegativeInt = 2
    safety_down: NonNegativeInt = 1
    safety_overshooting_period: Duration = Duration(60)
    # MCM's --autoscaler-scaledown-annotation-during-rollout: keep the cluster autoscaler from
    # removing a deployment's nodes while it rolls out.
    autoscaler_scale_down_annotation_during_rollout: bool = True
    # False: no per-machine series (mcm_machine_current_status_phase, _info, _status_condition),
    # so a scrape stays small at 10 000s of machines; mcm_machine_items_total stays.
    metrics_per_machine: bool = True
    # The simulated cloud the ``sim`` driver calls (a class secret's simCloudURL overrides it);
    # unset: only classes whose secret names one can be served by it.
    sim_cloud_url: str | None = msgspec.field(default=None, name="simCloudURL")

    def for_machine(self, machine: Machine) -> MachineOptions:
        """MCM's ``getEffective*``: a machine's ``machineConfiguration`` wins over the flags.
        Call after ``validate_machine``; a value that does not parse is ignored here."""
        overrides = machine.spec.machine_configuration or MachineConfiguration()
        changes: dict[str, Any] = {}
        for field, text in (
            ("drain_timeout", overrides.drain_timeout),
            ("health_timeout", overrides.health_timeout),
            ("creation_timeout", overrides.creation_timeout),
            ("in_place_update_timeout", overrides.in_place_update_timeout),
            ("machine_preserve_timeout", overrides.machine_preserve_timeout),
        ):
            if text is not None:
                with contextlib.suppress(ValueError):
                    changes[field] = Duration(parse_duration(text))
        if overrides.max_evict_retries is not None:
            changes["max_evict_retries"] = overrides.max_evict_retries
        conditions = overrides.node_condition_types()
        if conditions is not None:
            changes["node_conditions"] = conditions
        # MCM main: the deployment's effective-creation-timeout, as the machine carries it,
        # wins over the machine's own creationTimeout.
        effective = machine.metadata.annotations.get(EFFECTIVE_CREATION_TIMEOUT_ANNOTATION)
        if effective is not None:
            with contextlib.suppress(ValueError):
                changes["creation_timeout"] = Duration(parse_duration(effective))
        return msgspec.structs.replace(self, **changes) if changes else self

    @property
    def evict_retries(self) -> int:
        """Retries that fit in the drain timeout at one per 20 s (MCM caps them the same way)."""
        return max(
            1, min(self.max_evict_retries, int(self.drain_timeout / EVICTION_RETRY_INTERVAL))
        )
