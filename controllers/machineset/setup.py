"""Registering the MachineSet controller: the set and machine informers (shared with the
machine controller), the expectation bookkeeping on machine events, and the controller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.retry import ShortRetry
from kubetrio.controllers.machineset import webhooks
from kubetrio.controllers.machineset.control import MachineControl
from kubetrio.controllers.machineset.metrics import machineset_metrics
from kubetrio.controllers.machineset.reconciler import MachineSetContext, MachineSetReconciler
from kubetrio.controllers.sharding import writes
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown, Lister
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.controller.ratelimit import default_controller_rate_limiter
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.sharder import ShardedKind
from kubetrio.runtime.util.labels import selector_matches

# MCM records its Events under one component for all its controllers.
COMPONENT = "machine-controller-manager"


def owning_set(machine: Machine) -> ObjectKey | None:
    ref = machine.metadata.controller_ref()
    if ref is None or ref.kind != MachineSet.KIND.kind:
        return None
    if ref.api_version.split("/")[0] != MachineSet.KIND.group:
        return None
    return ObjectKey(machine.namespace, ref.name)


def sets_of_machine(sets: Lister[MachineSet]) -> Any:
    """A machine's controlling set; for an orphan every set that selects it (which may adopt
    it). An empty or missing selector selects nothing."""

    def mapper(machine: Machine) -> Iterable[ObjectKey]:
        owner = owning_set(machine)
        if owner is not None:
            return (owner,)
        if not machine.metadata.labels:
            return ()
        return [
            ObjectKey(s.namespace, s.name)
            for s in sets.list(machine.namespace)
            if s.spec.selector is not None
            and (s.spec.selector.match_labels or s.spec.selector.match_expressions)
            and selector_matches(s.spec.selector, machine.metadata.labels)
        ]

    return mapper


def expectation_handler(ctx: MachineSetContext) -> EventHandler[Machine]:
    """Counts off what sets expect as the cache sees it (client-go's ReplicaSet handlers): a
    controlled machine's arrival is a creation, its deletion timestamp or removal a deletion."""
    expectations = ctx.expectations

    def deleted(machine: Machine) -> None:
        owner = owning_set(machine)
        if owner is not None:
            expectations.deletion_observed(owner, machine.name)

    def on_add(machine: Machine, initial: bool) -> None:
        if machine.deleting:
            deleted(machine)  # a restart may list machines already being deleted
            return
        owner = owning_set(machine)
        if owner is not None:
            expectations.creation_observed(owner)

    def on_update(old: Machine, new: Machine) -> None:
        if new.deleting:
            deleted(new)
            if owning_set(old) != owning_set(new):
                deleted(old)

    def on_delete(machine: Machine | DeletedFinalStateUnknown[Machine]) -> None:
        deleted(machine.obj if isinstance(machine, DeletedFinalStateUnknown) else machine)

    return EventHandler(on_add=on_add, on_update=on_update, on_delete=on_delete)


def setup(manager: Manager, config: Any) -> MachineSetContext:
    """Register the controller; the context is returned for tests and embedders."""
    options: MachineOptions = config.machine
    namespace = options.namespace
    cache = manager.cache
    sets = cache.informer(MachineSet, namespace=namespace).lister
    machine_informer = cache.informer(Machine, namespace=namespace)
    stale = machineset_metrics(manager.registry, sets)
    work = writes(manager)
    nodes = manager.cluster(TARGET).cache.informer(Node).lister
    ctx = MachineSetContext(
        client=work.client,
        sets=sets,
        machines=machine_informer.lister,
        nodes=nodes,
        control=MachineControl(
            work.client,
            manager.event_recorder(COMPONENT, sharded=work.sharded),
            on_stale_removed=stale.inc,
        ),
    )
    machine_informer.add_handler(expectation_handler(ctx))
    builder = (
        manager.controller("machineset")
        .rate_limiter(
            # MCM drops a key after 15 retries (≤ 82 s) and resyncs; ours never sleeps past
            # ShortRetry, so nothing waits out an outage's backoff once it is over.
            default_controller_rate_limiter(cap=ShortRetry)
        )
        .for_(MachineSet, namespace=namespace)
        # Every machine is read from the whole cache (machines counts them all, assigned or
        # not), so a set that just moved here never takes its machines for missing.
        .watches(Machine, sets_of_machine(sets), namespace=namespace)
    )
    if manager.shard is not None:
        builder = builder.sharded()
        # Its machines follow it: a set and its machines are on one shard.
        manager.shard.shard_kind(ShardedKind(Machine, controlled=True, namespace=namespace))
    builder.complete(MachineSetReconciler(ctx))
    if getattr(config, "webhooks", False):
        webhooks.register(manager)
    return ctx
