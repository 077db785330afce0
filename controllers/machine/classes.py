"""MachineClass protection: a class in use keeps a finalizer, so deleting it waits until its
last machine is gone.

Without it, a class deleted while machines still use it leaves them undeletable: the deletion
flow needs the class (and its secret) to ask the provider to delete the VM (MCM #1061).
"""

from __future__ import annotations

from kubetrio.controllers.machine.context import MACHINE_CLASS_INDEX, MachineContext
from kubetrio.controllers.machine.status import FINALIZER
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.util.finalizers import ensure_finalizer, remove_finalizer
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machineclass")


class MachineClassFinalizer:
    def __init__(self, ctx: MachineContext) -> None:
        self.ctx = ctx

    async def reconcile(self, key: ObjectKey) -> Result:
        ctx = self.ctx
        machine_class = ctx.classes.get(key.namespace, key.name)
        if machine_class is None:
            return Result()
        users = [
            m
            for m in ctx.machines.by_index(MACHINE_CLASS_INDEX, key.name)
            if m.namespace == key.namespace
        ]
        held = FINALIZER in machine_class.metadata.finalizers
        if machine_class.deleting:
            if users:
                # Each machine's departure brings this class back here (machines are watched).
                log.info(
                    "machine class deletion waits for its machines",
                    machine_class=key.name,
                    machines=len(users),
                )
            elif held:
                await remove_finalizer(ctx.client, machine_class, FINALIZER)
        elif users and not held:
            await ensure_finalizer(ctx.client, machine_class, FINALIZER)
        return Result()
