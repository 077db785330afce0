"""Admission webhooks for Machine and MachineClass: refuse at the door what the machine
controller would later fail on, with the same checks (``validation``).

A Machine with ``spec.machineConfiguration.drainTimeout: 5x`` or a MachineClass naming a
provider no driver serves is otherwise accepted by the API server and only reported later, in
the object's status; with the webhooks on (``kubetrio run --webhooks``), ``kubectl apply``
says at once::

    The request is invalid: admission webhook "vmachine-v1alpha1.machine.sapcloud.io" denied
    the request: Machine.machine.sapcloud.io "m1" is invalid:
    spec.machineConfiguration.drainTimeout: invalid duration "5x"

MCM defines no defaults for these kinds, so there is no defaulting webhook for them. Updates
ratchet (``kubetrio.runtime.webhook.fields``): an object already stored with a problem can
still be updated, as long as the update adds none.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetrio.api.machine import PRESERVE_ANNOTATION, PRESERVE_VALUES, Machine, MachineClass
from kubetrio.controllers.machine.validation import validate_class, validate_machine
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.webhook.fields import FieldValidator
from kubetrio.runtime.webhook.manifest import Registrar


def machine_problems(machine: Machine) -> list[str]:
    """The controller's checks, and a preserve annotation the controller would ignore."""
    problems = validate_machine(machine)
    value = machine.metadata.annotations.get(PRESERVE_ANNOTATION)
    if value is not None and value not in PRESERVE_VALUES:
        problems.append(
            f"metadata.annotations[{PRESERVE_ANNOTATION}]: {go_quote(value)} must be one of "
            f"[{' '.join(sorted(PRESERVE_VALUES))}]"
        )
    return problems


def register(webhooks: Registrar, providers: Sequence[str] = ()) -> None:
    """``providers``: the names the registered drivers serve (a class's ``provider``)."""
    known = list(providers)
    webhooks.webhook(Machine).validator(FieldValidator(Machine, machine_problems))
    webhooks.webhook(MachineClass).validator(
        FieldValidator(MachineClass, lambda c: validate_class(c, known))
    )
