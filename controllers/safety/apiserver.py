"""MCM's API-server watchdog: while a cluster's API server has been unreachable for longer than
``--machine-safety-apiserver-statuscheck-timeout``, the machine controller is frozen.

Why: an outage leaves every cache stale and lets health timeouts run out on machines whose nodes
were fine all along (their kubelets could not report). Acting on that would mark whole pools
Failed and replace them. So the controller stands still while frozen, and on recovery every
Unknown machine gets its health timeout restarted — it is set back to Running and the normal
health check, 30 s later, decides again on fresh node conditions.

One difference from MCM on purpose: MCM keeps the moment an outage began after the server
answers again, so a second short blip later freezes at once; here an answer clears it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import trio

from kubetrio.api.core import Node
from kubetrio.api.machine import (
    OPERATION_HEALTH_CHECK,
    PHASE_RUNNING,
    PHASE_UNKNOWN,
    STATE_SUCCESSFUL,
    Machine,
)
from kubetrio.api.meta import KubeObject
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.status import NODE_LABEL, Operation
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, object_path
from kubetrio.runtime.controller.queue import ObjectKey, WorkQueue
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.safety")

HEALTH_TIMEOUT_RESET = "Machine Health Timeout was reset due to APIServer being unreachable"
# A reset machine is looked at again after this long, to put its phase back to what its node
# says (MCM's number).
RECHECK_AFTER_RESET = 30.0
# MCM's probe: a GET of an object that does not exist. Answered 404 means the server, its
# authentication and its storage work; anything else (or no answer in time) means unreachable.
PROBE_NAME = "dummy_name"


@dataclass(frozen=True, slots=True)
class ApiServer:
    """One API server to watch: a name for logs, its client, and the kind its probe GETs."""

    name: str
    client: Client
    kind: type[KubeObject]
    namespace: str = ""


def control_cluster(client: Client, namespace: str) -> ApiServer:
    """The cluster holding the Machines (MCM probes a Machine in the machine namespace)."""
    return ApiServer("control", client, Machine, namespace)


def target_cluster(client: Client) -> ApiServer:
    """The cluster holding the Nodes (MCM probes a Node)."""
    return ApiServer("target", client, Node)


async def answers(server: ApiServer, within: float) -> bool:
    """Whether ``server`` answers MCM's probe within ``within`` seconds."""
    path = object_path(server.kind.KIND, server.namespace, PROBE_NAME)
    with trio.move_on_after(within):
        try:
            await server.client.request("GET", path, read_timeout=within)
        except ApiError as error:
            if error.status == 404:
                return True
            log.warning("API server unreachable", cluster=server.name, error=str(error))
            return False
        return True  # an object of that name exists: still an answer
    log.warning("API server unreachable", cluster=server.name, error=f"no answer in {within:g}s")
    return False


class ApiServerWatchdog:
    """A leader-only runnable of the manager, as MCM runs its safety loops only when leading."""

    needs_leader_election = True
    needs_shard_lease = False
    # Sharded: only this shard's machines are reset after an outage.
    label_selector: str | None = None

    def __init__(
        self, ctx: MachineContext, queue: WorkQueue[ObjectKey], servers: Sequence[ApiServer]
    ) -> None:
        self.ctx = ctx
        self.queue = queue
        self.servers = tuple(servers)
        self._down_since: float | None = None

    async def run(self) -> None:
        while True:
            delay = await self.check()
            await trio.sleep(delay)

    async def all_up(self) -> bool:
        timeout = self.ctx.options.safety_apiserver_status_check_timeout
        for server in self.servers:
            if not await answers(server, timeout):
                return False
        return True

    async def check(self) -> float:
        """One round of MCM's check; the seconds until the next."""
        options = self.ctx.options
        freeze = self.ctx.freeze
        period = options.safety_apiserver_status_check_period
        timeout = options.safety_apiserver_status_check_timeout
        up = await self.all_up()
        if freeze.frozen:
            if up:
                try:
                    await self._reset_health_timeouts()
                except ApiError as error:
                    # Stay frozen: unfreezing with timeouts not reset is what the freeze
                    # exists to prevent.
                    log.warning("health timeout reset failed, staying frozen", error=str(error))
                    return timeout / 5
                self._down_since = None
                freeze.set(False)
                log.info("unfreezing the machine controller")
            return period
        if up:
            self._down_since = None
            return period
        started = self._down_since
        if started is None:
            started = self._down_since = trio.current_time()
        if trio.current_time() - started > timeout:
            freeze.set(True)
            log.warning("freezing the machine controller", unreachable_for=float(timeout))
        return timeout / 5  # look more often until it is frozen

    async def _reset_health_timeouts(self) -> None:
        """Every Unknown machine back to Running with a fresh phase clock, and every machine
        looked at again shortly to put its phase back to what its node says.

        Listed from the API server, not the cache: right after an outage the informers may
        still be backing off, and a machine that turned Unknown meanwhile must not be missed.
        An error that says the server is still unwell is raised (stay frozen and retry); a
        refusal of one machine is logged and that machine left, so it cannot hold every
        other machine frozen."""
        ctx = self.ctx
        listed = await ctx.client.list(
            Machine,
            namespace=ctx.options.namespace,
            label_selector=self.label_selector,
            on_undecodable=lambda _: None,
        )
        for machine in listed.items:
            if machine.phase == PHASE_UNKNOWN:
                try:
                    await self._reset(machine)
                except ApiError as error:
                    if error.status == 404:
                        continue
                    if error.status in (0, 409, 429) or error.status >= 500:
                        raise
                    log.warning(
                        "machine health timeout not reset", machine=machine.name, error=str(error)
                    )
            self.queue.add_after(ObjectKey(machine.namespace, machine.name), RECHECK_AFTER_RESET)

    async def _reset(self, machine: Machine) -> None:
        """MCM's reset: Running, timeout inactive, the phase clock restarted now. Written with
        the resourceVersion listed, so a concurrent change wins and the next round decides."""
        await self.ctx.status.write(
            machine,
            Operation(HEALTH_TIMEOUT_RESET, STATE_SUCCESSFUL, OPERATION_HEALTH_CHECK),
            phase=PHASE_RUNNING,
            timeout_active=False,
            reason="HealthTimeoutReset",
        )
        log.info(
            "machine health timeout reset",
            machine=machine.name,
            node=machine.metadata.labels.get(NODE_LABEL, ""),
            provider_id=machine.spec.provider_id,
        )
