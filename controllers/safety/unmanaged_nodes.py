"""Nodes no Machine accounts for carry MCM's ``node.machine.sapcloud.io/not-managed-by-mcm``
annotation, and lose it once a Machine claims them (MCM master).

Why: operators and autoscalers need to tell nodes this controller will replace and drain from
nodes someone else brought (a hand-joined node, a VM whose Machine was lost). A node younger
than the creation timeout is left alone: its Machine may simply not have labelled it yet.
"""

from __future__ import annotations

import trio

from kubetrio.api.core import Node
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.retry import MediumRetry
from kubetrio.controllers.machine.status import NOT_MANAGED_ANNOTATION
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.util.clock import seconds_since
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.safety")

__all__ = ["NOT_MANAGED_ANNOTATION", "UnmanagedNodeAnnotator"]


class UnmanagedNodeAnnotator:
    """A leader-only runnable: at start, then every ``--machine-safety-orphan-vms-period``
    (MCM runs it in the same loop as the orphan-VM sweep), sooner after a failed write."""

    needs_leader_election = True

    def __init__(self, ctx: MachineContext) -> None:
        self.ctx = ctx

    async def run(self) -> None:
        while True:
            failed = await self.sweep()
            period = self.ctx.options.safety_orphan_vms_period
            await trio.sleep(min(period, MediumRetry) if failed else period)

    async def sweep(self) -> int:
        """Annotate or clear every node once; how many writes failed (each is logged, and
        one node's failure never stops the others)."""
        failed = 0
        for node in self.ctx.nodes.list():
            try:
                await self._settle(node)
            except ApiError as error:
                if error.status != 404:  # a node gone meanwhile needs nothing
                    failed += 1
                    log.warning("could not annotate node", node=node.name, error=str(error))
        return failed

    async def _settle(self, node: Node) -> None:
        machines = self.ctx.machines_on_node(node.name)
        annotated = NOT_MANAGED_ANNOTATION in node.metadata.annotations
        if len(machines) > 1:
            log.warning(
                "node claimed by more than one machine",
                node=node.name,
                machines=",".join(sorted(m.name for m in machines)),
            )
            return
        if machines:
            if annotated:
                await self._annotate(node, None)
                log.info("node is managed again", node=node.name, machine=machines[0].name)
            return
        age = seconds_since(parse_time(node.metadata.creation_timestamp))
        if annotated or age is None or age < self.ctx.options.creation_timeout:
            return
        await self._annotate(node, "1")
        log.info("node not managed by any machine", node=node.name)

    async def _annotate(self, node: Node, value: str | None) -> None:
        """A merge patch of the one key (None removes it): other annotations stay untouched."""
        await self.ctx.target.patch(
            Node, node.name, {"metadata": {"annotations": {NOT_MANAGED_ANNOTATION: value}}}
        )
