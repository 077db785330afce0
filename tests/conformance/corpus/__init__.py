"""The conformance corpus: probes by area (each module's ``PROBES``)."""

from __future__ import annotations

from ..runner import Probe
from . import (
    apply,
    auth,
    core,
    custom,
    deletion,
    kinds,
    listwatch,
    patching,
    pods,
    serving,
    workloads,
)

AREAS: dict[str, list[Probe]] = {
    "apply": apply.PROBES,
    "auth": auth.PROBES,
    "core": core.PROBES,
    "custom": custom.PROBES,
    "deletion": deletion.PROBES,
    "kinds": kinds.PROBES,
    "listwatch": listwatch.PROBES,
    "patching": patching.PROBES,
    "pods": pods.PROBES,
    "serving": serving.PROBES,
    "workloads": workloads.PROBES,
}
ALL: list[Probe] = [p for probes in AREAS.values() for p in probes]
