"""Meltdown protection: at most one machine of a MachineDeployment is marked Failed at a time.

When a zone or the network fails, every machine turns Unknown together; replacing them all at
once would tear down a whole pool for a problem no new VM fixes. MCM lets one machine per
deployment fail while others are being replaced; the rest wait.

MCM finds a machine's deployment by its label ``name`` alone, so machines whose template lacks
it were never held back. Here the owner chain decides (machine → its controlling MachineSet →
that set's controlling MachineDeployment), the label only where there is no chain.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager

import trio

from kubetrio.api.machine import PHASE_RUNNING, PHASE_TERMINATING, PHASE_UNKNOWN, Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.machine.status import DEPLOYMENT_LABEL
from kubetrio.runtime.cache.store import Lister

MAX_REPLACEMENTS = 1
LOCK_TIMEOUT = 1.0
MACHINE_SET_INDEX = "machine.set"


def machine_set_of(machine: Machine) -> Iterable[str]:
    """Index: the name of the MachineSet controlling the machine."""
    ref = machine.metadata.controller_ref()
    return (ref.name,) if ref is not None and ref.kind == "MachineSet" else ()


def deployment_of(machine: Machine, sets: Lister[MachineSet]) -> str | None:
    """The deployment whose replacements the machine counts against: the owner chain's, else
    the ``name`` label's (MCM), else none (the machine is not rate-limited)."""
    ref = machine.metadata.controller_ref()
    if ref is not None and ref.kind == "MachineSet":
        machine_set = sets.get(machine.namespace, ref.name)
        if machine_set is not None and machine_set.metadata.uid == ref.uid:
            owner = machine_set.metadata.controller_ref()
            if owner is not None and owner.kind == "MachineDeployment":
                return owner.name
    return machine.metadata.labels.get(DEPLOYMENT_LABEL) or None


def deployment_machines(
    deployment: str,
    namespace: str,
    machines: Lister[Machine],
    sets: Lister[MachineSet],
    by_label: Sequence[Machine],
) -> list[Machine]:
    """Every machine of the deployment's sets, plus those the label assigns to it."""
    found = {(m.namespace, m.name): m for m in by_label if deployment_of(m, sets) == deployment}
    for machine_set in sets.list(namespace):
        owner = machine_set.metadata.controller_ref()
        if owner is None or owner.kind != "MachineDeployment" or owner.name != deployment:
            continue
        for machine in machines.by_index(MACHINE_SET_INDEX, machine_set.name):
            if machine.namespace == namespace and deployment_of(machine, sets) == deployment:
                found[(machine.namespace, machine.name)] = machine
    return list(found.values())


def replacements_in_progress(machines: Sequence[Machine]) -> int:
    """MCM's count: every machine neither Running nor Unknown is being replaced or created;
    a Terminating one counts twice (its replacement is on the way too). A preserved one is
    not being replaced, so it does not count (a Terminating one still does, once)."""
    count = 0
    for machine in machines:
        if machine.phase not in (PHASE_RUNNING, PHASE_UNKNOWN):
            kept = machine.status.current_status.preserve_expiry_time is not None
            count += (0 if kept else 1) + (1 if machine.phase == PHASE_TERMINATING else 0)
    return count


class FailurePermits:
    """One lock per deployment, so two workers cannot both count "nobody is failing" and mark
    two machines. The holder keeps it until the cache shows its write."""

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}

    @asynccontextmanager
    async def hold(self, deployment: str) -> AsyncIterator[bool]:
        """Yields False when the lock could not be had within a second (MCM's permit wait)."""
        lock = self._locks.setdefault(deployment, trio.Lock())
        acquired = False
        with trio.move_on_after(LOCK_TIMEOUT):
            await lock.acquire()
            acquired = True
        try:
            yield acquired
        finally:
            if acquired:
                lock.release()
            # Nobody holds or waits for it: drop it, so deployments long gone keep no lock.
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._locks.pop(deployment, None)
