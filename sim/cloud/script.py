"""What a MachineClass's ``providerSpec`` tells the simulated cloud to do with its VMs, parsed
once per call with errors that name the field (they reach the user as InvalidArgument).

The class's ``nodeTemplate`` (MCM's capacity, instance type, region, zone, architecture) shapes
the VM as well, so its Node is what the template promises autoscalers; what the providerSpec
sets explicitly (``instanceType``, ``capacity``) is the driver's own say and wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrio.sim.cloud.errors import CODE_HTTP_STATUS, CloudError

OPERATIONS = ("create", "initialize", "status", "delete", "list")
DEFAULT_CAPACITY = {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "50Gi"}
# A template's "gpu" capacity is this resource on the node (as autoscalers read it).
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class LaterCondition:
    """A node condition the VM's kubelet reports ``after_seconds`` after boot."""

    type: str
    status: str
    after_seconds: float
    reason: str = "Simulated"


@dataclass(frozen=True, slots=True)
class Failure:
    """Fail the next ``count`` calls of an operation with ``code``."""

    code: str
    count: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class VmScript:
    region: str = "sim-1"
    boot_seconds: float = 0.0
    # How long a create call takes to answer; the VM exists (and boots) from its start, as
    # with clouds whose create call returns only once the VM is up.
    create_seconds: float = 0.0
    never_ready: bool = False
    needs_initialization: bool = False
    node_name: str = ""
    instance_type: str = "sim.standard"
    node_region: str = ""  # the Node's region label, when not the providerSpec's region
    zone: str = ""
    architecture: str = "amd64"
    capacity: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    conditions_after: tuple[LaterCondition, ...] = ()
    fail_next: dict[str, Failure] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: Any, node_template: Any = None) -> VmScript:
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise _invalid("providerSpec", "must be an object")
        if node_template is None:
            node_template = {}
        if not isinstance(node_template, dict):
            raise _invalid("nodeTemplate", "must be an object")
        capacity = spec.get("capacity", _template_capacity(node_template))
        if not isinstance(capacity, dict):
            raise _invalid("providerSpec.capacity", "must be an object of quantities")
        where = "nodeTemplate"
        return cls(
            region=_str(spec, "region", "sim-1"),
            node_region=_str(node_template, "region", "", where),
            zone=_str(node_template, "zone", "", where),
            architecture=_str(node_template, "architecture", "amd64", where) or "amd64",
            boot_seconds=_seconds(spec, "bootSeconds"),
            create_seconds=_seconds(spec, "createSeconds"),
            never_ready=_bool(spec, "neverReady"),
            needs_initialization=_bool(spec, "needsInitialization"),
            node_name=_str(spec, "nodeName", ""),
            instance_type=_str(
                spec,
                "instanceType",
                _str(node_template, "instanceType", "", where) or "sim.standard",
            ),
            capacity={str(k): str(v) for k, v in capacity.items()},
            conditions_after=_conditions(spec.get("conditionAfter")),
            fail_next=parse_failures(spec.get("failNext"), "providerSpec.failNext"),
        )


def _template_capacity(template: dict[str, Any]) -> dict[str, Any]:
    """The default capacity with the template's over it; a zero gpu is no GPU."""
    wanted = template.get("capacity", {})
    if not isinstance(wanted, dict):
        raise _invalid("nodeTemplate.capacity", "must be an object of quantities")
    capacity: dict[str, Any] = dict(DEFAULT_CAPACITY)
    for name, quantity in wanted.items():
        if name == "gpu":
            if str(quantity) not in ("0", ""):
                capacity[GPU_RESOURCE] = quantity
        else:
            capacity[name] = quantity
    return capacity


def parse_failures(value: Any, where: str) -> dict[str, Failure]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _invalid(where, "must be an object keyed by operation")
    failures: dict[str, Failure] = {}
    for op, rule in value.items():
        if op not in OPERATIONS:
            raise _invalid(f"{where}.{op}", f"unknown operation (one of {', '.join(OPERATIONS)})")
        failures[op] = parse_failure(rule, f"{where}.{op}")
    return failures


def parse_failure(rule: Any, where: str) -> Failure:
    if not isinstance(rule, dict):
        raise _invalid(where, "must be an object with code and count")
    code = rule.get("code", "Internal")
    if code not in CODE_HTTP_STATUS:
        raise _invalid(f"{where}.code", f"unknown machine code {code!r}")
    count = rule.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _invalid(f"{where}.count", "must be a non-negative integer")
    message = rule.get("message", "")
    if not isinstance(message, str):
        raise _invalid(f"{where}.message", "must be a string")
    return Failure(code=code, count=count, message=message)


def _conditions(value: Any) -> tuple[LaterCondition, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out: list[LaterCondition] = []
    for i, item in enumerate(items):
        where = f"providerSpec.conditionAfter[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise _invalid(where, "must be an object with type, status and afterSeconds")
        status = item.get("status", "True")
        if status not in ("True", "False", "Unknown"):
            raise _invalid(f"{where}.status", "must be True, False or Unknown")
        out.append(
            LaterCondition(
                type=item["type"],
                status=status,
                after_seconds=_seconds(item, "afterSeconds", where),
                reason=_str(item, "reason", "Simulated", where),
            )
        )
    return tuple(out)


def _str(spec: dict[str, Any], key: str, default: str, where: str = "providerSpec") -> str:
    value = spec.get(key, default)
    if not isinstance(value, str):
        raise _invalid(f"{where}.{key}", "must be a string")
    return value


def _bool(spec: dict[str, Any], key: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise _invalid(f"providerSpec.{key}", "must be true or false")
    return value


def _seconds(spec: dict[str, Any], key: str, where: str = "providerSpec") -> float:
    value = spec.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _invalid(f"{where}.{key}", "must be a non-negative number of seconds")
    return float(value)


def _invalid(where: str, message: str) -> CloudError:
    return CloudError("InvalidArgument", f"{where}: {message}")
