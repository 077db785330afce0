"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules.

* Acquire: take the lease when nobody holds it, or when its record has not changed for a full
  ``lease_duration`` *as observed locally* (wall clocks of other replicas are never trusted;
  only how long we have watched the record stand still).
* Renew every ``retry_period``; if no renewal succeeds within ``renew_deadline`` the leader steps
  down at once. ``renew_deadline < lease_duration`` guarantees it has stopped before anyone
  else may take over, so two leaders never act at the same time.
* Every write is a JSON patch guarded by a ``resourceVersion`` test: of two replicas racing for
  the same record, exactly one wins.
* On shutdown the leader can release the lease (empty holder), so a successor starts at once.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import trio
from prometheus_client import CollectorRegistry, Gauge

from kubetrio.api.coordination import Lease, LeaseSpec
from kubetrio.runtime.client import Client
from kubetrio.runtime.errors import ApiError, is_already_exists
from kubetrio.runtime.log import get_logger

log = get_logger("kubetrio.leaderelection")

# client-go's JitterFactor for retrying acquisition.
ACQUIRE_JITTER = 1.2


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline."""


@dataclass(frozen=True, slots=True)
class LeaderElectionOptions:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not (self.lease_duration > self.renew_deadline > self.retry_period > 0):
            raise ValueError(
                "leader election needs leaseDuration > renewDeadline > retryPeriod > 0, got "
                f"{self.lease_duration}/{self.renew_deadline}/{self.retry_period}"
            )
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")


_status_gauges: weakref.WeakKeyDictionary[CollectorRegistry, Gauge] = weakref.WeakKeyDictionary()


def _status_gauge(registry: CollectorRegistry) -> Gauge:
    gauge = _status_gauges.get(registry)
    if gauge is None:
        gauge = _status_gauges[registry] = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=registry,
        )
    return gauge


def micro_time(moment: datetime | None = None) -> str:
    """``metav1.MicroTime`` as the API server writes it."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: Client,
        options: LeaderElectionOptions,
        *,
        registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.is_leader = False
        self.observed_holder: str | None = None
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._rng = rng or random.Random()
        self._gauge = _status_gauge(registry).labels(options.name) if registry else None
        self._log = log.bind(lease=f"{options.namespace}/{options.name}", identity=options.identity)

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Acquire the lease, then run ``lead()`` while renewing it.

        Returns when ``lead`` returns (releasing the lease if configured). Raises
        ``LeadershipLost`` — after cancelling ``lead`` — when renewal fails.
        """
        await self._acquire()
        lost = False
        try:
            async with trio.open_nursery() as nursery:

                async def lead_then_stop() -> None:
                    await lead()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(lead_then_stop)
                if not await self._renew_until_failure():
                    lost = True
                    nursery.cancel_scope.cancel()
        finally:
            self._set_leader(False)
            if not lost and self.options.release_on_cancel:
                with trio.CancelScope(shield=True), trio.move_on_after(self.options.retry_period):
                    await self._release()
        if lost:
            raise LeadershipLost(
                f"lease {self.options.namespace}/{self.options.name}: not renewed within "
                f"{self.options.renew_deadline}s"
            )

    async def _acquire(self) -> None:
        self._log.info("attempting to acquire leader lease")
        while not await self._try_acquire_or_renew():
            period = self.options.retry_period
            await trio.sleep(period + self._rng.random() * ACQUIRE_JITTER * period)
        self._set_leader(True)
        self._log.info("acquired leader lease")

    async def _renew_until_failure(self) -> bool:
        """Renew every retry period; False once a renewal window passed without success."""
        while True:
            renewed = False
            with trio.move_on_after(self.options.renew_deadline):
                # Polling is the protocol here: the lease lives on the API server.
                while not await self._try_acquire_or_renew():  # noqa: ASYNC110
                    await trio.sleep(self.options.retry_period)
                renewed = True
            if not renewed:
                self._log.error("failed to renew leader lease, stepping down")
                return False
            await trio.sleep(self.options.retry_period)

    def _set_leader(self, leading: bool) -> None:
        self.is_leader = leading
        if self._gauge is not None:
            self._gauge.set(1 if leading else 0)

    async def _try_acquire_or_renew(self) -> bool:
        opts = self.options
        now = micro_time()
        try:
            lease = await self.client.get_or_none(Lease, opts.name, opts.namespace)
            if lease is None:
                spec = LeaseSpec(
                    holder_identity=opts.identity,
                    lease_duration_seconds=round(opts.lease_duration),
                    acquire_time=now,
                    renew_time=now,
                    lease_transitions=0,
                )
                body = Lease(spec=spec)
                body.metadata.name, body.metadata.namespace = opts.name, opts.namespace
                created = await self.client.create(Lease, body)
                self._observe(created)
                return True
            self._observe(lease)
            record = lease.spec
            holder = record.holder_identity or ""
            if holder and holder != opts.identity:
                expires = self._observed_at + (record.lease_duration_seconds or opts.lease_duration)
                if expires > trio.current_time():
                    return False
            new_record = {
                "holderIdentity": opts.identity,
                "leaseDurationSeconds": round(opts.lease_duration),
                "renewTime": now,
                "acquireTime": record.acquire_time if holder == opts.identity else now,
                "leaseTransitions": (record.lease_transitions or 0)
                + (0 if holder == opts.identity else 1),
            }
            updated = await self.client.patch(
                Lease,
                opts.name,
                [
                    {
                        "op": "test",
                        "path": "/metadata/resourceVersion",
                        "value": lease.metadata.resource_version,
                    },
                    {"op": "replace", "path": "/spec", "value": new_record},
                ],
                namespace=opts.namespace,
                patch_type="json",
            )
            self._observe(updated)
            return True
        except ApiError as error:
            if not is_already_exists(error) and error.status not in (409, 422):
                self._log.warning("leader lease request failed", error=str(error))
            return False

    def _observe(self, lease: Lease) -> None:
        spec = lease.spec
        record = (spec.holder_identity, spec.renew_time, spec.acquire_time, spec.lease_transitions)
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = trio.current_time()
            self.observed_holder = spec.holder_identity

    async def _release(self) -> None:
        """Hand the lease back so a successor need not wait out the lease duration."""
        opts = self.options
        try:
            lease = await self.client.get_or_none(Lease, opts.name, opts.namespace)
            if lease is None or lease.spec.holder_identity != opts.identity:
                return
            now = micro_time()
            await self.client.patch(
                Lease,
                opts.name,
                [
                    {
                        "op": "test",
                        "path": "/metadata/resourceVersion",
                        "value": lease.metadata.resource_version,
                    },
                    {
                        "op": "replace",
                        "path": "/spec",
                        "value": {
                            "holderIdentity": "",
                            "leaseDurationSeconds": 1,
                            "acquireTime": now,
                            "renewTime": now,
                            "leaseTransitions": lease.spec.lease_transitions or 0,
                        },
                    },
                ],
                namespace=opts.namespace,
                patch_type="json",
            )
            self._log.info("released leader lease")
        except ApiError as error:
            self._log.warning("could not release leader lease", error=str(error))
