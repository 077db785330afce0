"""The termination queue: machines being deleted are reconciled by a controller of their own
(``machinetermination``, MCM's queue name), so a deletion never waits behind creations and
health checks on the main ``machine`` queue, however many of those there are or however slow
the provider is to answer them.

The two controllers share one rule for who owns a machine: a machine with a deletion
timestamp belongs to the termination queue unless its creation flow is running at that
moment. A deletion started during a create call waits for that call to return (the VM it
brings back is deleted with the machine rather than orphaned), then the creation flow hands
the machine over itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.meta import KubeObject
from kubetrio.controllers.machine import deletion
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.retry import MediumRetry, ShortRetry
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util.log import get_logger

TERMINATION_CONTROLLER = "machinetermination"

log = get_logger("kubetrio.machine")

# The machine's class and its secret's data, or the Result to end the pass with when the class
# cannot serve (the problem said on the machine); shared with the main reconciler.
ClassResolver = Callable[[Machine], Awaitable["tuple[MachineClass, SecretData] | Result"]]


def terminating(ctx: MachineContext, key: ObjectKey) -> bool:
    """Whether the termination queue owns the machine at ``key`` now."""
    machine = ctx.machines.get(key.namespace, key.name)
    return machine is not None and machine.deleting and key not in ctx.creating


def routed(
    ctx: MachineContext,
    mapper: Callable[[KubeObject], Iterable[ObjectKey]],
    *,
    to_termination: bool,
) -> Callable[[KubeObject], list[ObjectKey]]:
    """``mapper``'s keys that belong on one queue: a node, class or volume event wakes a
    machine on the queue that owns it, never on both."""

    def mapped(obj: KubeObject) -> list[ObjectKey]:
        return [key for key in mapper(obj) if terminating(ctx, key) == to_termination]

    return mapped


def owned_by_termination(ctx: MachineContext) -> Predicate:
    """Machine events for the termination queue: a machine seen deleting when added (a
    restart finds the deletions in flight this way) or updated, and every delete (its
    status bookkeeping is let go)."""

    def mine(machine: KubeObject) -> bool:
        return machine.deleting and ObjectKey(machine.namespace, machine.name) not in ctx.creating

    return Predicate(create=mine, update=lambda _old, new: mine(new), delete=lambda _m: True)


def owned_by_main(ctx: MachineContext) -> Predicate:
    """Machine events for the main queue: the rest."""
    mine = owned_by_termination(ctx)
    return Predicate(
        create=lambda m: not mine.create(m),
        update=lambda old, new: not mine.update(old, new),
        delete=lambda _m: False,
    )


class TerminationReconciler:
    """The deletion flow, one step after another (``deletion``), for machines with a
    deletion timestamp."""

    def __init__(self, ctx: MachineContext, resolve_class: ClassResolver) -> None:
        self.ctx = ctx
        self.resolve_class = resolve_class

    async def reconcile(self, key: ObjectKey) -> Result:
        ctx = self.ctx
        if not await ctx.caught_up(key):
            return Result(requeue_after=ShortRetry)  # the watch is behind: look again soon
        machine = ctx.machines.get(key.namespace, key.name)
        if machine is None:
            ctx.status.forget(key.namespace, key.name)
            return Result()
        if not machine.deleting:
            return Result()  # a stale key: the main queue has the machine
        if key in ctx.creating:
            # The creation flow hands the machine back when its call returns; MediumRetry is
            # MCM's fallback should that hand-over be lost.
            log.info("machine is in its creation flow, deletion waits", machine=machine.name)
            return Result(requeue_after=MediumRetry)
        resolved = await self.resolve_class(machine)
        if isinstance(resolved, Result):
            return resolved
        machine_class, data = resolved
        options = ctx.options.for_machine(machine)
        try:
            retry = await deletion.delete(ctx, machine, machine_class, data, options)
        except ApiError as error:
            if error.status != 404:
                raise
            return Result()  # a pass on a stale cache: the machine is gone already
        return Result(requeue_after=retry)
