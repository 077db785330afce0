"""Checks of a Machine and its MachineClass before anything is done with them, each problem
named by its field so the user can fix the manifest from the message alone."""

from __future__ import annotations

import re

import msgspec

from kubetrio.api.machine import (
    ClassNodeTemplate,
    Machine,
    MachineClass,
    NodeTemplate,
    parse_duration,
)
from kubetrio.runtime.util.gotext import go_quote

MAX_DURATION = (2**63 - 1) / 1e9  # Go's time.Duration limit, in seconds
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A qualified name with an optional DNS-subdomain prefix, as labels and annotations use.
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def template_problems(template: NodeTemplate, where: str) -> list[str]:
    problems = [
        f"{where}.metadata.labels: invalid key {go_quote(key)}"
        for key in template.metadata.labels
        if not _QUALIFIED.match(key)
    ]
    problems += [
        f"{where}.metadata.labels[{key}]: invalid value {go_quote(value)}"
        for key, value in template.metadata.labels.items()
        if not _LABEL_VALUE.match(value)
    ]
    problems += [
        f"{where}.metadata.annotations: invalid key {go_quote(key)}"
        for key in template.metadata.annotations
        if not _QUALIFIED.match(key)
    ]
    for index, taint in enumerate(template.spec.taints):
        if not taint.key or not _QUALIFIED.match(taint.key):
            problems.append(f"{where}.spec.taints[{index}].key: invalid key {go_quote(taint.key)}")
        if taint.effect not in _TAINT_EFFECTS:
            problems.append(
                f"{where}.spec.taints[{index}].effect: {go_quote(taint.effect)} is not one of "
                + ", ".join(_TAINT_EFFECTS)
            )
    return problems


def validate_machine(machine: Machine) -> list[str]:
    spec = machine.spec
    problems: list[str] = []
    if not spec.class_.name:
        problems.append("spec.class.name: required")
    if spec.class_.kind not in ("", "MachineClass"):
        problems.append(f"spec.class.kind: {go_quote(spec.class_.kind)} is not MachineClass")
    overrides = spec.machine_configuration
    if overrides is not None:
        for field, text in (
            ("drainTimeout", overrides.drain_timeout),
            ("healthTimeout", overrides.health_timeout),
            ("creationTimeout", overrides.creation_timeout),
            ("inPlaceUpdateTimeout", overrides.in_place_update_timeout),
            ("machinePreserveTimeout", overrides.machine_preserve_timeout),
        ):
            if text is None:
                continue
            try:
                seconds = parse_duration(text)
            except ValueError:
                problems.append(
                    f"spec.machineConfiguration.{field}: invalid duration {go_quote(text)}"
                )
                continue
            if seconds <= 0:
                problems.append(f"spec.machineConfiguration.{field}: must be positive")
            elif not seconds <= MAX_DURATION:  # also catches inf and nan
                problems.append(
                    f"spec.machineConfiguration.{field}: longer than Go's maximum duration "
                    "(about 292 years)"
                )
        if overrides.max_evict_retries is not None and overrides.max_evict_retries < 0:
            problems.append("spec.machineConfiguration.maxEvictRetries: must not be negative")
    if spec.node_template is not None:
        problems += template_problems(spec.node_template, "spec.nodeTemplate")
    return problems


def class_node_template(machine_class: MachineClass) -> ClassNodeTemplate | None:
    """The class's node template, typed; ValueError naming the field when it does not fit."""
    if machine_class.node_template is None:
        return None
    try:
        return msgspec.convert(machine_class.node_template, ClassNodeTemplate)
    except msgspec.ValidationError as error:
        raise ValueError(f"nodeTemplate: {error}") from None


# MCM's validateNodeTemplate: these capacities, and non-empty instance type, region and zone.
REQUIRED_CAPACITY = ("cpu", "gpu", "memory")
MISSING_CAPACITY = (
    "MachineClass NodeTemplate Capacity should mandatorily have CPU, GPU and Memory configured"
)
MISSING_PLACEMENT = "MachineClass NodeTemplate Instance Type, region and zone cannot be empty"


def node_template_problem(template: ClassNodeTemplate) -> str | None:
    """MCM's error for an incomplete template, word for word: one entry per missing capacity
    and one for the placement, printed as Go prints a slice of errors."""
    errors = [MISSING_CAPACITY for name in REQUIRED_CAPACITY if name not in template.capacity]
    if not (template.instance_type and template.region and template.zone):
        errors.append(MISSING_PLACEMENT)
    return f"[{' '.join(errors)}]" if errors else None


def validate_class(
    machine_class: MachineClass, known_providers: list[str], *, provider_only: bool = False
) -> list[str]:
    """``provider_only``: what a deletion needs (a driver), not what creation needs."""
    problems: list[str] = []
    if machine_class.provider not in known_providers:
        problems.append(
            f"provider: no machine driver for {go_quote(machine_class.provider)} "
            f"(known: {', '.join(known_providers) or 'none'})"
        )
    if not provider_only:
        try:
            template = class_node_template(machine_class)
        except ValueError as error:
            problems.append(str(error))
        else:
            problem = None if template is None else node_template_problem(template)
            if problem is not None:
                problems.append(problem)
    return problems
