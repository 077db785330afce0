"""Registering the machine controller with a manager: informers, indexes, drivers, metrics,
the reconciler and the safety loops that guard it.

Machines, classes and their Secrets come from the manager's primary (control) cluster; Nodes,
Pods, volumes and bootstrap tokens from ``manager.cluster(TARGET)`` (see ``controllers.clusters``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import msgspec

from kubetrio.api.core import Node, PersistentVolume, Secret
from kubetrio.api.machine import NODE_IN_PLACE_UPDATE, Machine, MachineClass, MachineSpec
from kubetrio.api.machineset import MachineSet
from kubetrio.api.meta import KubeObject, ObjectMeta
from kubetrio.api.storage import VolumeAttachment
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine import webhooks
from kubetrio.controllers.machine.bootstrap import TOKEN_LABEL, TOKEN_NAMESPACE
from kubetrio.controllers.machine.classes import MachineClassFinalizer
from kubetrio.controllers.machine.context import (
    ATTACHMENT_NODE_INDEX,
    MACHINE_CLASS_INDEX,
    MACHINE_DEPLOYMENT_INDEX,
    MACHINE_NODE_INDEX,
    MachineContext,
    attachment_node,
    machine_class_name,
    machine_deployment,
    machine_node,
)
from kubetrio.controllers.machine.deletion import TERMINATING_CONDITION
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.drain import UNSCHEDULABLE_TAINT, Drainer
from kubetrio.controllers.machine.drain.metrics import drain_metrics
from kubetrio.controllers.machine.drain.volumes import VolumeIdResolver
from kubetrio.controllers.machine.driver.driver import Driver
from kubetrio.controllers.machine.driver.fenced import FencedDriver
from kubetrio.controllers.machine.driver.plugins import load_drivers
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.durations import PoolDurations
from kubetrio.controllers.machine.failing import MACHINE_SET_INDEX, machine_set_of
from kubetrio.controllers.machine.metrics import InstrumentedDriver, MachineMetrics
from kubetrio.controllers.machine.nodes import (
    NODE_CONTROLLER,
    DeletedNodes,
    NodeReconciler,
    node_label_changed,
    node_of_machine,
    node_pass_needed,
)
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.reconciler import MachineReconciler
from kubetrio.controllers.machine.retry import ShortRetry
from kubetrio.controllers.machine.status import (
    FINALIZER,
    JOIN_DURATION_ANNOTATION,
    PRIORITY_ANNOTATION,
    StatusWriter,
)
from kubetrio.controllers.machine.termination import (
    TERMINATION_CONTROLLER,
    TerminationReconciler,
    owned_by_main,
    owned_by_termination,
    routed,
)
from kubetrio.controllers.safety.apiserver import control_cluster, target_cluster
from kubetrio.controllers.safety.setup import setup_machine_safety
from kubetrio.controllers.sharding import Writes, writes
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.controller.controller import Controller, Reconciler
from kubetrio.runtime.controller.predicates import Predicate, on_events
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.controller.ratelimit import default_controller_rate_limiter
from kubetrio.runtime.manager.manager import Manager

COMPONENT = "machine-controller"
OWN_ANNOTATIONS = frozenset({PRIORITY_ANNOTATION, JOIN_DURATION_ANNOTATION})


def _without_own(metadata: ObjectMeta, spec: MachineSpec) -> tuple[Any, ...]:
    """What others may change on a machine: everything but the status and the fields this
    controller writes itself (its finalizer, the priority annotation and the providerID). The
    node label counts: its arrival in the cache is what lets a node event that came first find
    this machine, so it earns the pass that looks at the node."""
    labels = metadata.labels
    annotations = {k: v for k, v in metadata.annotations.items() if k not in OWN_ANNOTATIONS}
    finalizers = [f for f in metadata.finalizers if f != FINALIZER]
    return (
        labels,
        annotations,
        finalizers,
        metadata.deletion_timestamp,
        msgspec.structs.replace(spec, provider_id=""),
    )


def machine_changed() -> Predicate:
    """Only updates made by someone else. This controller carries on from its own writes in
    the same pass, and reacting to their echo would cut a retry delay short (a machine failing
    creation would be retried at once instead of after ShortRetry)."""

    def changed(old: Machine, new: Machine) -> bool:
        return _without_own(old.metadata, old.spec) != _without_own(new.metadata, new.spec)

    return Predicate(update=changed)


def node_changed() -> Predicate:
    """Node updates that matter to a machine; a kubelet heartbeat alone does not, nor does a
    change this controller made itself (which would cut a retry delay short)."""

    def relevant(node: Node) -> tuple[Any, ...]:
        # The Terminating condition and the cordon are this controller's own doing.
        return (
            # The in-place condition's reason is copied onto the machine, where the deployment
            # reads it: its own writes of it count.
            [
                (c.type, c.status, c.reason if c.type == NODE_IN_PLACE_UPDATE else "")
                for c in node.status.conditions
                if c.type != TERMINATING_CONDITION
            ],
            node.metadata.labels,
            node.metadata.annotations,
            [t for t in node.spec.taints if t.key != UNSCHEDULABLE_TAINT],
            node.status.volumes_attached,
            node.metadata.deletion_timestamp,
        )

    def changed(old: Node, new: Node) -> bool:
        return relevant(old) != relevant(new)

    return Predicate(update=changed)


def machines_of_secret(ctx: MachineContext) -> Any:
    """A class secret's change (its userData arriving, say) brings its machines' next pass."""

    def mapper(secret: KubeObject) -> list[ObjectKey]:
        classes = [
            c.name
            for c in ctx.classes.list(secret.metadata.namespace)
            if c.secret_ref is not None and c.secret_ref.name == secret.metadata.name
        ]
        return [
            key
            for name in classes
            for key in _keys(ctx.machines.by_index(MACHINE_CLASS_INDEX, name))
        ]

    return mapper


def class_settings_changed() -> Predicate:
    """Class updates that change what its machines get; its finalizer (this controller's own
    write) does not, and reacting to it would cut a machine's retry delay short."""

    def settings(c: MachineClass) -> tuple[Any, ...]:
        return (c.provider, c.provider_spec, c.secret_ref, c.node_template)

    return Predicate(update=lambda old, new: settings(old) != settings(new))


def class_of_machine(machine: KubeObject) -> list[ObjectKey]:
    assert isinstance(machine, Machine)
    name = machine.spec.class_.name
    return [ObjectKey(machine.namespace, name)] if name else []


def class_changed() -> Predicate:
    """Machines matter to their class when they come, go, or switch classes."""
    return Predicate(update=lambda old, new: old.spec.class_ != new.spec.class_)


def _keys(machines: Iterable[Machine]) -> list[ObjectKey]:
    return [ObjectKey(m.namespace, m.name) for m in machines]


def by_index(machines: Lister[Machine], index: str, value: Any) -> Any:
    def mapper(obj: KubeObject) -> list[ObjectKey]:
        return _keys(machines.by_index(index, value(obj)))

    return mapper


def default_drivers(manager: Manager, options: MachineOptions) -> DriverRegistry:
    """The drivers of every available plug-in (``driver.plugins``): ``sim``, ``aws`` when
    boto3 is installed, and those other packages contribute."""
    return load_drivers(manager, options=options)


def _wrapped(plain: DriverRegistry, provider: str, work: Writes, metrics: MachineMetrics) -> Driver:
    """``provider``'s driver as the controller calls it: fenced by the Lease its work proves
    (the leader's, or the shard's when sharded), measured."""
    driver = plain.get(provider)
    if work.fence is not None:
        driver = FencedDriver(driver, work.fence)
    return InstrumentedDriver(driver, provider, metrics)


def setup(manager: Manager, config: Any, drivers: DriverRegistry | None = None) -> MachineContext:
    """Register the controller; the context is returned for tests and embedders."""
    options: MachineOptions = config.machine
    namespace = options.namespace
    cache = manager.cache
    target = manager.cluster(TARGET)
    machine_informer = cache.informer(Machine, namespace=namespace)
    machine_informer.add_index(MACHINE_NODE_INDEX, machine_node)
    machine_informer.add_index(MACHINE_CLASS_INDEX, machine_class_name)
    machine_informer.add_index(MACHINE_DEPLOYMENT_INDEX, machine_deployment)
    machine_informer.add_index(MACHINE_SET_INDEX, machine_set_of)
    machines = machine_informer.lister
    drain_cache = DrainCache.from_cache(target.cache)
    attachment_informer = target.cache.informer(VolumeAttachment)
    attachment_informer.add_index(ATTACHMENT_NODE_INDEX, attachment_node)
    metrics = MachineMetrics(manager.registry, machines, per_machine=options.metrics_per_machine)
    classes = cache.informer(MachineClass, namespace=namespace).lister
    plain = drivers or default_drivers(manager, options)
    instrumented = DriverRegistry(plain.default, options)
    # Sharded, a replica's provider calls and writes for its machines are fenced by its shard
    # Lease; the leader's global loops (below) write through the leader's clients.
    work = writes(manager)
    for provider in plain:
        instrumented.register_lazy(provider, partial(_wrapped, plain, provider, work, metrics))
    events = manager.event_recorder(COMPONENT, sharded=work.sharded)
    ctx = MachineContext(
        client=work.client,
        target=work.target,
        options=options,
        drivers=instrumented,
        machines=machines,
        classes=classes,
        secrets=cache.informer(Secret, namespace=namespace).lister,
        tokens=target.cache.informer(
            Secret, namespace=TOKEN_NAMESPACE, label_selector=f"{TOKEN_LABEL}=true"
        ).lister,
        nodes=drain_cache.nodes,
        attachments=attachment_informer.lister,
        machine_changes=InformerChanges.of(machine_informer),
        drainer=Drainer(
            work.target,
            drain_cache,
            volume_resolver(instrumented),
            metrics=drain_metrics(manager.registry),
            # A drain's Events are about its Node: they belong with it, in the target cluster.
            events=manager.event_recorder(COMPONENT, cluster=TARGET, sharded=work.sharded),
        ),
        status=StatusWriter(work.client, events),
        metrics=metrics,
        sets=cache.informer(MachineSet, namespace=namespace).lister,
        durations=PoolDurations(manager.registry, machines, classes),
    )
    # Failures back off from 5 ms but per key never past ShortRetry, so once the API server
    # is healthy again a machine waits no longer than MCM would (it retries every error after
    # ShortRetry) — unless more keys failed than client-go's overall bucket passes (10 qps,
    # burst 100): then about keys ÷ 10 s, kept on purpose to spare a recovering API server.
    reconciler = MachineReconciler(ctx)
    _machine_controller(manager, ctx, "machine", reconciler, to_termination=False)
    # MCM runs every queue with the same number of workers (--concurrent-syncs).
    workers = manager.workers_for("machine")
    termination = _machine_controller(
        manager,
        ctx,
        TERMINATION_CONTROLLER,
        TerminationReconciler(ctx, reconciler.resolve_class),
        to_termination=True,
        workers=workers,
    )
    ctx.terminations = termination.queue
    # The leader's share: the Node queue and the class finalizer look across every machine.
    leader_ctx = (
        replace(
            ctx,
            client=manager.client,
            target=target.client,
            status=StatusWriter(manager.client, manager.event_recorder(COMPONENT)),
        )
        if work.sharded
        else ctx
    )
    deleted_nodes = DeletedNodes()
    target.cache.informer(Node).add_handler(deleted_nodes.handler())
    node_controller = (
        manager.controller(NODE_CONTROLLER)
        .rate_limiter(default_controller_rate_limiter(cap=ShortRetry))
        .workers(workers)
        .for_(Node, node_pass_needed(), cluster=target)
        .watches(Machine, node_of_machine, node_label_changed(), namespace=namespace)
        .complete(NodeReconciler(leader_ctx, deleted_nodes))
    )
    deleted_nodes.queue = node_controller.queue
    manager.controller("machineclass").rate_limiter(
        default_controller_rate_limiter(cap=ShortRetry)
    ).for_(MachineClass, namespace=namespace).watches(
        Machine, class_of_machine, class_changed(), namespace=namespace
    ).complete(MachineClassFinalizer(leader_ctx))
    api_servers = [control_cluster(ctx.client, namespace)]
    if target.client is not manager.client:
        api_servers.append(target_cluster(target.client))
    setup_machine_safety(manager, ctx, api_servers, leader_ctx=leader_ctx)
    if getattr(config, "webhooks", False):
        webhooks.register(manager, list(plain))
    return ctx


def _machine_controller(
    manager: Manager,
    ctx: MachineContext,
    name: str,
    reconciler: Reconciler[ObjectKey],
    *,
    to_termination: bool,
    workers: int | None = None,
) -> Controller[ObjectKey]:
    """One of the two machine queues, fed by the same sources; each event wakes a machine on
    the queue that owns it (``termination``)."""
    target = manager.cluster(TARGET)
    namespace = ctx.options.namespace
    machines = ctx.machines
    owned = owned_by_termination(ctx) if to_termination else owned_by_main(ctx)

    def route(mapper: Any) -> Any:
        return routed(ctx, mapper, to_termination=to_termination)

    # Failures back off from 5 ms but per key never past ShortRetry, so once the API server
    # is healthy again a machine waits no longer than MCM would (it retries every error after
    # ShortRetry) — unless more keys failed than client-go's overall bucket passes (10 qps,
    # burst 100): then about keys ÷ 10 s, kept on purpose to spare a recovering API server.
    builder = manager.controller(name).rate_limiter(default_controller_rate_limiter(cap=ShortRetry))
    if workers is not None:
        builder = builder.workers(workers)
    if manager.shard is not None:
        builder = builder.sharded()
    return (
        builder.for_(Machine, machine_changed(), owned, namespace=namespace)
        .watches(
            Node,
            route(by_index(machines, MACHINE_NODE_INDEX, lambda node: node.name)),
            node_changed(),
            cluster=target,
        )
        .watches(
            MachineClass,
            route(by_index(machines, MACHINE_CLASS_INDEX, lambda c: c.name)),
            class_settings_changed(),
            namespace=namespace,
        )
        .watches(
            Secret,
            route(machines_of_secret(ctx)),
            on_events(delete=False),
            namespace=namespace,
        )
        .watches(
            VolumeAttachment,
            route(by_index(machines, MACHINE_NODE_INDEX, lambda a: a.spec.node_name)),
            cluster=target,
        )
        .complete(reconciler)
    )


def volume_resolver(drivers: DriverRegistry) -> VolumeIdResolver:
    """Volume IDs from every driver: each answers only for the volumes it owns, so a drain
    sees exactly the provider volumes, whichever provider's node it drains."""

    async def resolve(pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        found: dict[str, str] = {}
        for driver in drivers.built():
            found.update(await driver.get_volume_ids(pvs))
        return found

    return resolve
