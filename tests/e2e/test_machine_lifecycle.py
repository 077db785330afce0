"""The machine controller end to end: machines are created at the simulated cloud, join,
report health, and are deleted through MCM's deletion flow — all through the API."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.api.core import Secret
from kubetrio.api.machine import PHASE_PENDING, PHASE_RUNNING
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.status import FINALIZER, PRIORITY_ANNOTATION
from kubetrio.runtime.emulator import Emulator

from .machines import MACHINE_API, install_crds, machine_doc, machine_manager, seed_class


async def test_machine_is_created_joins_and_is_deleted(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    seed_class(emu, bootSeconds=30)
    async with machine_manager(emu) as h:
        emu.create(machine_doc("m-1"))
        pending = await h.wait_phase("m-1", PHASE_PENDING)
        created_at = trio.current_time()
        assert FINALIZER in pending.metadata.finalizers
        assert pending.metadata.labels["node"] == "m-1"
        assert pending.metadata.annotations[PRIORITY_ANNOTATION] == "3"
        assert pending.spec.provider_id.startswith("sim://eu-1/")
        assert pending.status.last_operation.description == "Creating machine on cloud provider"
        token = await h.client.get(Secret, token_secret_name("m-1", "default"), TOKEN_NAMESPACE)
        assert token.type == "bootstrap.kubernetes.io/token"

        running = await h.wait_phase("m-1", PHASE_RUNNING)
        assert 29 <= trio.current_time() - created_at <= 32  # the VM's boot time, not a poll
        assert (
            running.status.last_operation.description
            == "Machine m-1 successfully joined the cluster"
        )
        assert running.condition("Ready") is not None
        assert await h.client.get_or_none(Secret, token.name, TOKEN_NAMESPACE) is None

        emu.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert h.node("m-1") is None or h.node("m-1").deleting
        vms = await h.ctx.drivers.get("sim").list_machines(
            h.ctx.classes.get("default", "small"), {}
        )
        assert vms == {}
