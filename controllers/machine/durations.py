"""MCM's per-pool lifecycle metrics, under MCM's names and labels, for tools built on them
(Gardener's dependency-watchdog reads them):

- ``mcm_machine_{create,initialize,join,delete}_duration_seconds{namespace,
  machine_deployment,instance_type,zone}`` and ``mcm_machine_drain_duration_seconds{namespace,
  machine_deployment}``: gauges holding the last such duration of a machine of that pool, in
  whole seconds (MCM's gauges, not histograms: the distribution is kubetrio's own
  ``kubetrio_machine_*_duration_seconds``);
- ``mcm_machine_num_failed_join``: machines of a pool that did not join within the creation
  timeout. Every pool the cache shows has a series from the first scrape, at 0 until a machine
  fails, so alerts and panels see a pool before its first failure.

A machine without the ``name`` label (its MachineDeployment) is counted nowhere, as in MCM.
``instance_type`` is the class's ``nodeTemplate.instanceType``, ``zone`` the machine's node
template label ``topology.kubernetes.io/zone``; either is empty when unset.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.status import DEPLOYMENT_LABEL
from kubetrio.runtime.cache.store import Lister

STEPS = ("create", "initialize", "join", "drain", "delete")
POOL_LABELS = ("namespace", "machine_deployment", "instance_type", "zone")
DRAIN_LABELS = ("namespace", "machine_deployment")
ZONE_LABEL = "topology.kubernetes.io/zone"
FAILED_JOIN = "mcm_machine_num_failed_join"
_HELP = {
    "create": "Duration in seconds to create a Machine of a MachineDeployment.",
    "initialize": "Duration in seconds to initialize a Machine of a MachineDeployment.",
    "join": "Duration in seconds for a Machine of a MachineDeployment to join the cluster",
    "drain": "Duration in seconds to drain a Machine of a MachineDeployment.",
    "delete": "Duration in seconds to delete a Machine of a MachineDeployment.",
}

Labels = tuple[str, ...]


def pool_of(
    machine: Machine, machine_class: MachineClass | None, *, placement: bool = True
) -> Labels | None:
    """The label values of the machine's pool; None for a machine of no deployment."""
    deployment = machine.metadata.labels.get(DEPLOYMENT_LABEL, "")
    if not deployment:
        return None
    if not placement:
        return (machine.namespace, deployment)
    template = (machine_class.node_template if machine_class is not None else None) or {}
    instance_type = template.get("instanceType", "")
    node_template = machine.spec.node_template
    zone = node_template.metadata.labels.get(ZONE_LABEL, "") if node_template else ""
    return (
        machine.namespace,
        deployment,
        instance_type if isinstance(instance_type, str) else "",
        zone,
    )


def _whole_seconds(seconds: float) -> float:
    """Go's ``Duration.Round(time.Second)``: halves away from zero."""
    return float(math.floor(seconds + 0.5)) if seconds >= 0 else -float(math.floor(-seconds + 0.5))


class PoolDurations(Collector):
    """The last duration of each step per pool, and failed joins per pool."""

    def __init__(
        self,
        registry: CollectorRegistry,
        machines: Lister[Machine],
        classes: Lister[MachineClass],
    ) -> None:
        self._machines = machines
        self._classes = classes
        self._last: dict[str, dict[Labels, float]] = {step: {} for step in STEPS}
        self._failed_joins: dict[Labels, int] = {}
        registry.register(self)

    def _class_of(self, machine: Machine) -> MachineClass | None:
        return self._classes.get(machine.namespace, machine.spec.class_.name)

    def observe(self, step: str, machine: Machine, seconds: float) -> None:
        """A machine of a pool took ``seconds`` for ``step``. A timestamp written by an API
        server whose clock runs a little ahead can make it negative: that is 0."""
        seconds = max(0.0, seconds)
        pool = pool_of(machine, self._class_of(machine), placement=step != "drain")
        if pool is not None:
            self._last[step][pool] = _whole_seconds(seconds)

    def failed_to_join(self, machine: Machine) -> None:
        pool = pool_of(machine, self._class_of(machine))
        if pool is not None:
            self._failed_joins[pool] = self._failed_joins.get(pool, 0) + 1

    def collect(self) -> Iterator[Metric]:
        for step in STEPS:
            labels = DRAIN_LABELS if step == "drain" else POOL_LABELS
            family = GaugeMetricFamily(
                f"mcm_machine_{step}_duration_seconds", _HELP[step], labels=list(labels)
            )
            for pool, value in sorted(self._last[step].items()):
                family.add_metric(list(pool), value)
            yield family
        # A gauge by type: prometheus_client would name a counter ``..._total``, and MCM's
        # (Go) counter has no suffix; queries go by the name.
        failed = GaugeMetricFamily(
            FAILED_JOIN,
            "Number of Machines of a MachineDeployment that failed to join the cluster.",
            labels=list(POOL_LABELS),
        )
        counts: dict[Labels, int] = dict.fromkeys(self._pools(), 0)
        counts.update(self._failed_joins)
        for pool, count in sorted(counts.items()):
            failed.add_metric(list(pool), count)
        yield failed

    def _pools(self) -> set[Labels]:
        pools: set[Labels] = set()
        for machine in self._machines.list():
            pool = pool_of(machine, self._class_of(machine))
            if pool is not None:
                pools.add(pool)
        return pools
