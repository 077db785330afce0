"""The node controller (MCM's ``node`` queue): a machine's Node carries the machine
controller's finalizer, and a Node deleted out from under its machine has the machine deleted,
so its MachineSet replaces it at once instead of after the health timeout.

The finalizer holds a deleted Node until the machine's deletion flow has drained it and
deleted its VM; the flow's node step removes the finalizer and deletes the Node together.
Nodes annotated ``not-managed-by-mcm``, and nodes no single machine claims, are left alone;
the Node of a machine already being deleted gets no finalizer.
"""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.api.machine import Machine
from kubetrio.api.meta import KubeObject
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.status import NODE_FINALIZER, NODE_LABEL, NOT_MANAGED_ANNOTATION
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Preconditions
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.queue import ObjectKey, WorkQueue
from kubetrio.runtime.util.finalizers import ensure_finalizer, remove_finalizer
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.util.log import get_logger

NODE_CONTROLLER = "node"

log = get_logger("kubetrio.machine")


class DeletedNodes:
    """Names of Nodes whose deletion the informer delivered and the node controller has not
    handled yet: a Node missing from the cache is a deletion only then, never merely a node
    that has not registered."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.queue: WorkQueue[ObjectKey] | None = None

    def handler(self) -> EventHandler[Node]:
        def on_add(node: Node, _initial: bool) -> None:
            self.names.discard(node.name)

        def on_delete(obj: Node | DeletedFinalStateUnknown[Node]) -> None:
            node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if NOT_MANAGED_ANNOTATION in node.metadata.annotations:
                return
            self.names.add(node.name)
            if self.queue is not None:
                self.queue.add(ObjectKey("", node.name))

        return EventHandler(on_add=on_add, on_delete=on_delete)


def node_of_machine(machine: KubeObject) -> list[ObjectKey]:
    """A machine's arrival, or its ``node`` label, brings its node's pass: the node usually
    registers before the machine is labelled with it."""
    assert isinstance(machine, Machine)
    name = machine.metadata.labels.get(NODE_LABEL, "")
    return [ObjectKey("", name)] if name else []


def node_label_changed() -> Predicate:
    return Predicate(
        update=lambda old, new: (
            old.metadata.labels.get(NODE_LABEL) != new.metadata.labels.get(NODE_LABEL)
            or old.deleting != new.deleting
        ),
        delete=lambda _m: False,
    )


def node_pass_needed() -> Predicate:
    """Node updates that may call for work: a deletion begun, the finalizer or the
    not-managed annotation changed. Heartbeats do not."""

    def relevant(node: Node) -> tuple[object, ...]:
        return (
            node.deleting,
            NODE_FINALIZER in node.metadata.finalizers,
            NOT_MANAGED_ANNOTATION in node.metadata.annotations,
        )

    return Predicate(
        update=lambda old, new: relevant(old) != relevant(new), delete=lambda _n: False
    )


class NodeReconciler:
    def __init__(self, ctx: MachineContext, deleted: DeletedNodes) -> None:
        self.ctx = ctx
        self.deleted = deleted

    async def reconcile(self, key: ObjectKey) -> Result:
        ctx = self.ctx
        node = ctx.nodes.get("", key.name)
        gone = node is None and key.name in self.deleted.names
        if node is None and not gone:
            return Result()  # not registered yet: its arrival brings the next pass
        machines = ctx.machines_on_node(key.name)
        if node is not None and (
            NOT_MANAGED_ANNOTATION in node.metadata.annotations or not machines
        ):
            # Nothing of a machine's to hold: a deleted node keeps no finalizer of ours (its
            # machine may have been removed by hand, flow and all).
            if node.deleting:
                await release_node(ctx, node)
            return Result()
        if len(machines) != 1:
            if machines:
                log.warning(
                    "node claimed by more than one machine, left alone",
                    node=key.name,
                    machines=",".join(sorted(m.name for m in machines)),
                )
            self.deleted.names.discard(key.name)
            return Result()
        machine = machines[0]
        if gone or (node is not None and node.deleting):
            await self._delete_machine(machine, key.name)
            self.deleted.names.discard(key.name)
            return Result()
        assert node is not None
        if not machine.deleting and NODE_FINALIZER not in node.metadata.finalizers:
            await ensure_finalizer(ctx.target, node, NODE_FINALIZER)
        return Result()

    async def _delete_machine(self, machine: Machine, node: str) -> None:
        if machine.deleting:
            return
        log.info("node deleted, deleting its machine", node=node, machine=machine.name)
        await self.ctx.status.events_only(
            machine,
            "Normal",
            "NodeGone",
            f"Node {go_quote(node)} of machine {go_quote(machine.name)} has been deleted. "
            "Triggering machine deletion flow.",
        )
        try:
            await self.ctx.client.delete(
                Machine,
                machine.name,
                namespace=machine.namespace,
                preconditions=Preconditions(uid=machine.metadata.uid),
            )
        except ApiError as error:
            if error.status not in (404, 409):  # gone, or a namesake made since
                raise


async def release_node(ctx: MachineContext, node: Node) -> None:
    """Take the machine controller's finalizer off a node (before deleting it)."""
    if NODE_FINALIZER in node.metadata.finalizers:
        await remove_finalizer(ctx.target, node, NODE_FINALIZER)
