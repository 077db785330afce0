"""Admission webhooks for MachineDeployment: MCM's defaults set on the way in, and what the
controller would fail on refused at the door.

Defaults (the mutating webhook; the CRD schema sets none of these): ``spec.strategy.type``
RollingUpdate (MCM's documented default), and for RollingUpdate ``maxSurge`` and
``maxUnavailable`` of 1 each where unset (the Kubernetes ``extensions/v1beta1`` Deployment
defaults MCM's deployment controller was ported from). Without them the controller refuses a
RollingUpdate deployment without ``rollingUpdate``. ``revisionHistoryLimit`` and
``progressDeadlineSeconds`` stay unset: unset means "keep every old set" and "no deadline",
and ``minReadySeconds``/``replicas`` are 0 when absent anyway.

Refused (the validating webhook, 422 naming the field): replicas below 0, an unknown strategy,
an unparsable or out-of-range maxSurge/maxUnavailable, a selector not matching
``spec.template.metadata.labels``, a template without a class, and template machine settings
the machine controller would refuse, an ``effective-creation-timeout`` annotation that is not
a duration::

    kubectl apply -f md.yaml
    ... MachineDeployment.machine.sapcloud.io "md" is invalid: spec.selector.matchLabels: is
    not matching with spec.template.metadata.labels
"""

from __future__ import annotations

import msgspec

from kubetrio.api.machine import EFFECTIVE_CREATION_TIMEOUT_ANNOTATION, parse_duration
from kubetrio.api.machineset import MachineDeployment, RollingUpdateMachineDeployment
from kubetrio.controllers.machinedeployment.fenceposts import STRATEGY_ROLLING_UPDATE, SpecError
from kubetrio.controllers.machinedeployment.state import validate
from kubetrio.controllers.machineset.webhooks import template_problems
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.webhook.fields import FieldValidator
from kubetrio.runtime.webhook.manifest import Registrar
from kubetrio.runtime.webhook.review import AdmissionRequest

DEFAULT_MAX_SURGE = 1
DEFAULT_MAX_UNAVAILABLE = 1


async def default(deployment: MachineDeployment, request: AdmissionRequest) -> MachineDeployment:
    strategy = deployment.spec.strategy
    kind = strategy.type or STRATEGY_ROLLING_UPDATE
    rolling = strategy.rolling_update
    if kind == STRATEGY_ROLLING_UPDATE:
        rolling = rolling or RollingUpdateMachineDeployment()
        rolling = msgspec.structs.replace(
            rolling,
            max_surge=DEFAULT_MAX_SURGE if rolling.max_surge is None else rolling.max_surge,
            max_unavailable=DEFAULT_MAX_UNAVAILABLE
            if rolling.max_unavailable is None
            else rolling.max_unavailable,
        )
    spec = msgspec.structs.replace(
        deployment.spec,
        strategy=msgspec.structs.replace(strategy, type=kind, rolling_update=rolling),
    )
    return msgspec.structs.replace(deployment, spec=spec)


def problems(deployment: MachineDeployment) -> list[str]:
    found: list[str] = []
    try:
        validate(deployment)
    except SpecError as error:
        found.append(str(error))
    effective = deployment.metadata.annotations.get(EFFECTIVE_CREATION_TIMEOUT_ANNOTATION)
    if effective is not None:
        try:
            parse_duration(effective)
        except ValueError:
            found.append(
                f"metadata.annotations[{EFFECTIVE_CREATION_TIMEOUT_ANNOTATION}]: "
                f"{go_quote(effective)} is not a duration (like 10m or 1h30m)"
            )
    return found + template_problems(deployment.spec.template)


def register(webhooks: Registrar) -> None:
    webhooks.webhook(MachineDeployment).defaulter(default).validator(
        FieldValidator(MachineDeployment, problems)
    )
