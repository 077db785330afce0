"""The machine controller's safety options (MCM's flags) and a machine's own overrides."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any

from kubetrio.api.machine import Machine, parse_duration

DEFAULT_NODE_CONDITIONS = (
    "KernelDeadlock",
    "ReadonlyFilesystem",
    "DiskPressure",
    "NetworkUnavailable",
)
# MCM evicts every 20 s until the drain timeout, so retries beyond timeout / 20 s never happen.
EVICTION_RETRY_INTERVAL = 20.0
# A force drain gets this long and one eviction attempt (MCM's numbers).
FORCE_DRAIN_TIMEOUT = 60.0
# A node NotReady (or read-only) for this long is not drained gently: its kubelet cannot act.
UNHEALTHY_NODE_FORCE_AFTER = 300.0


@dataclass(frozen=True, slots=True)
class SafetyOptions:
    namespace: str = "default"
    creation_timeout: float = 20 * 60.0
    health_timeout: float = 10 * 60.0
    drain_timeout: float = 2 * 3600.0
    max_evict_retries: int = 360
    pv_detach_timeout: float = 120.0
    pv_reattach_timeout: float = 90.0
    node_conditions: tuple[str, ...] = DEFAULT_NODE_CONDITIONS
    orphan_vms_period: float = 15 * 60.0
    apiserver_status_check_period: float = 60.0
    apiserver_status_check_timeout: float = 30.0

    @classmethod
    def from_config(cls, machine: Any) -> SafetyOptions:
        """From the manager config's ``machine`` section (already validated there)."""
        return cls(
            namespace=machine.namespace,
            creation_timeout=float(machine.creation_timeout),
            health_timeout=float(machine.health_timeout),
            drain_timeout=float(machine.drain_timeout),
            max_evict_retries=int(machine.max_evict_retries),
            pv_detach_timeout=float(machine.pv_detach_timeout),
            pv_reattach_timeout=float(machine.pv_reattach_timeout),
            node_conditions=tuple(machine.node_conditions),
            orphan_vms_period=float(machine.safety_orphan_vms_period),
            apiserver_status_check_period=float(machine.safety_apiserver_status_check_period),
            apiserver_status_check_timeout=float(machine.safety_apiserver_status_check_timeout),
        )

    def for_machine(self, machine: Machine) -> SafetyOptions:
        """MCM's ``getEffective*``: a machine's ``machineConfiguration`` wins over the flags.
        Call after ``validate_machine``; a value that does not parse is ignored here."""
        overrides = machine.spec.machine_configuration
        if overrides is None:
            return self
        changes: dict[str, Any] = {}
        for field, text in (
            ("drain_timeout", overrides.drain_timeout),
            ("health_timeout", overrides.health_timeout),
            ("creation_timeout", overrides.creation_timeout),
        ):
            if text is not None:
                with contextlib.suppress(ValueError):
                    changes[field] = parse_duration(text)
        if overrides.max_evict_retries is not None:
            changes["max_evict_retries"] = overrides.max_evict_retries
        conditions = overrides.node_condition_types()
        if conditions is not None:
            changes["node_conditions"] = conditions
        return dataclasses.replace(self, **changes) if changes else self

    @property
    def evict_retries(self) -> int:
        """Retries that fit in the drain timeout at one per 20 s (MCM caps them the same way)."""
        return max(
            1, min(self.max_evict_retries, int(self.drain_timeout / EVICTION_RETRY_INTERVAL))
        )
