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

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.validation import validate_class, validate_machine
from kubetrio.runtime.webhook.fields import FieldValidator
from kubetrio.runtime.webhook.manifest import Registrar


def register(webhooks: Registrar, providers: Sequence[str] = ()) -> None:
    """``providers``: the names the registered drivers serve (a class's ``provider``)."""
    known = list(providers)
    webhooks.webhook(Machine).validator(FieldValidator(Machine, validate_machine))
    webhooks.webhook(MachineClass).validator(
        FieldValidator(MachineClass, lambda c: validate_class(c, known))
    )
