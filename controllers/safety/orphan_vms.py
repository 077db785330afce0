"""The orphan-VM sweep: VMs the provider lists that no Machine accounts for are deleted.

A VM outlives its Machine when a deletion was forced around the controller (finalizer removed
by hand) or a creation's record was lost; it costs money and may still hold a node name. The
sweep runs once the caches are synced and then every ``--machine-safety-orphan-vms-period``.
A Machine that exists but has no providerID yet is still being created: its VM is left alone.
"""

from __future__ import annotations

import trio

from kubetrio.api.machine import Machine, MachineClass, MachineSpec
from kubetrio.api.meta import ObjectMeta
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.registry import UnknownProvider
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.safety")


class OrphanVmCollector:
    """A leader-only runnable of the manager."""

    needs_leader_election = True

    def __init__(self, ctx: MachineContext) -> None:
        self.ctx = ctx

    async def run(self) -> None:
        while True:
            await self.sweep()
            await trio.sleep(self.ctx.options.safety_orphan_vms_period)

    async def sweep(self) -> int:
        """Delete every orphan VM once; how many were deleted. Errors are logged, never fatal."""
        deleted = 0
        for machine_class in self.ctx.classes.list():
            try:
                deleted += await self._sweep_class(machine_class)
            except (MachineError, UnknownProvider) as error:
                log.warning(
                    "orphan VM sweep failed", machine_class=machine_class.name, error=str(error)
                )
        return deleted

    async def _sweep_class(self, machine_class: MachineClass) -> int:
        ctx = self.ctx
        driver = ctx.drivers.for_class(machine_class)
        data = ctx.secret_data(machine_class)
        vms = await driver.list_machines(machine_class, data)
        deleted = 0
        for provider_id, machine_name in vms.items():
            machine = ctx.machines.get(machine_class.namespace, machine_name)
            if machine is not None and machine.spec.provider_id in ("", provider_id):
                continue  # accounted for, or still being created
            orphan = Machine(
                metadata=ObjectMeta(name=machine_name, namespace=machine_class.namespace),
                spec=MachineSpec(provider_id=provider_id),
            )
            try:
                await driver.delete_machine(orphan, machine_class, data)
            except MachineError as error:
                if error.code != Code.NotFound:
                    log.warning(
                        "could not delete orphan VM", provider_id=provider_id, error=str(error)
                    )
                    continue
            deleted += 1
            ctx.metrics.orphans_deleted.inc()
            log.info("orphan VM deleted", provider_id=provider_id, machine=machine_name)
        return deleted
