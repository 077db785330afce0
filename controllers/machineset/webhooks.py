"""Admission webhook for MachineSet: refuses what the MachineSet controller would fail on —
replicas below 0, an empty selector, a selector not matching ``spec.template.metadata.labels``,
a template without a class — and a template whose machines the machine controller would refuse
(``spec.template.spec.machineConfiguration.drainTimeout: invalid duration "5x"``).

MCM defines no defaults for MachineSet: no defaulting webhook. Served with
``kubetrio run --webhooks``; see ``kubetrio.controllers.machine.webhooks``.
"""

from __future__ import annotations

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet, MachineTemplateSpec
from kubetrio.controllers.machine.validation import validate_machine
from kubetrio.controllers.machineset.reconciler import validate
from kubetrio.runtime.webhook.fields import FieldValidator
from kubetrio.runtime.webhook.manifest import Registrar


def template_problems(template: MachineTemplateSpec) -> list[str]:
    """The machine controller's checks of the machines this template makes (but the class
    name, which the set's and deployment's own checks already require)."""
    machine = Machine(spec=template.spec)
    problems = validate_machine(machine)
    return [f"spec.template.{p}" for p in problems if not p.startswith("spec.class.name:")]


def problems(machine_set: MachineSet) -> list[str]:
    found = validate(machine_set)
    return ([found] if found else []) + template_problems(machine_set.spec.template)


def register(webhooks: Registrar) -> None:
    webhooks.webhook(MachineSet).validator(FieldValidator(MachineSet, problems))
