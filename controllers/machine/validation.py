"""Checks of a Machine and its MachineClass before anything is done with them, each problem
named by its field so the user can fix the manifest from the message alone."""

from __future__ import annotations

import re

import msgspec

from kubetrio.api.machine import Machine, MachineClass, NodeTemplate, parse_duration
from kubetrio.runtime.gotext import go_quote

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


def class_node_template(machine_class: MachineClass) -> NodeTemplate | None:
    """The class's node template, decoded (call after ``validate_class``)."""
    if machine_class.node_template is None:
        return None
    return msgspec.convert(machine_class.node_template, NodeTemplate)


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
    if machine_class.node_template is not None and not provider_only:
        try:
            template = msgspec.convert(machine_class.node_template, NodeTemplate)
        except msgspec.ValidationError as error:
            problems.append(f"nodeTemplate: {error}")
        else:
            problems += template_problems(template, "nodeTemplate")
    return problems
