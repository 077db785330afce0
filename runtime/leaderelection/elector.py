"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules, fenced.

* Acquire: take the lease when nobody holds it, or when its record has not changed for a full
  ``lease_duration`` *as observed locally* (wall clocks of other replicas are never trusted;
  only how long we have watched the record stand still). Retries are jittered (client-go's
  factor 1.2).
* Leadership is valid until ``renewed_at + renew_deadline``, ``renewed_at`` being the
  monotonic trio clock read *before sending* the last successful acquire/renew write. Others
  start counting the lease duration only when they observe that write, which is later, and
  ``renew_deadline < lease_duration``: while ``holds_lease()`` is true nobody else may have
  taken over. A frozen process's monotonic clock keeps counting, so a resumed leader finds its
  deadline passed and acts no more until a renewal succeeds — which it never gets to try,
  since the renew loop waits on that same absolute deadline and steps down.
* A lease observed held by another identity ends leadership at once: no retries.
* Every write is a JSON patch guarded by a ``resourceVersion`` test: of two replicas racing for
  the same record, exactly one wins.
* ``fence()`` hands leader-only writers (the manager's client, drivers, storage backends) the
  check they make right before each side effect (``kubetrio.runtime.leaderelection.fence``).
* On shutdown the leader can release the lease (empty holder), so a successor starts at once.
"""

from __future__ import annotations

import enum
import math
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import trio
from prometheus_client import CollectorRegistry, Gauge

from kubetrio.api.coordination import Lease, LeaseSpec
from kubetrio.runtime.client.errors import ApiError, is_already_exists
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.gen.rbac import Permissions, on
from kubetrio.runtime.leaderelection.fence import Fence
from kubetrio.runtime.leaderelection.leasefailure import LeaseRefused, lease_refusal
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.leaderelection")

# The Lease in the manager's own namespace: read, made by the first candidate, then renewed,
# taken over and released, each a JSON patch (never an update).
RBAC = Permissions(own_namespace=(on(Lease.KIND, "get", "create", "patch"),))

# client-go's JitterFactor for retrying acquisition.
ACQUIRE_JITTER = 1.2


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline, or another identity took it."""


@dataclass(frozen=True, slots=True)
class LeaderElectionOptions:
    """Where the Lease lives, who this replica is, and client-go's timing: a leader that cannot
    renew within ``renew_deadline`` steps down before ``lease_duration`` lets another take
    over; candidates retry every ``retry_period``."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    # Put on the Lease when this replica creates it (a shard's Lease names its ring).
    labels: Mapping[str, str] = field(default_factory=dict)

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


class Outcome(enum.Enum):
    """What one acquire-or-renew attempt found."""

    HELD = "held"  # we hold the lease now (acquired or renewed)
    OTHER = "other"  # another identity holds it and it has not expired
    FAILED = "failed"  # the request failed (error, conflict): try again


class LeaderElector:
    """Campaigns for the Lease with client-go's rules, renews it while leading, and answers the
    fence: leader-only writes ask it, just before they happen, whether the lease is proven
    held at that moment."""

    def __init__(
        self,
        client: Client,
        options: LeaderElectionOptions,
        *,
        registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client  # unfenced: the elector is what proves leadership
        self.options = options
        self.is_leader = False
        self.observed_holder: str | None = None
        # The trio clock before sending the last successful acquire/renew write, and the end
        # of the leadership it proves; ``_valid_until_monotonic`` is the same instant on
        # ``time.monotonic()``, which counts a frozen process's pause whatever trio's clock.
        self.renewed_at = -math.inf
        self.valid_until = -math.inf
        self._valid_until_monotonic = -math.inf
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._refused: LeaseRefused | None = None  # the last failure, when no retry heals it
        self._rng = rng or random.Random()
        self._gauge = _status_gauge(registry).labels(options.name) if registry else None
        self._log = log.bind(lease=f"{options.namespace}/{options.name}", identity=options.identity)

    # -- the fence --------------------------------------------------------------------------

    def holds_lease(self) -> bool:
        """Leader, and the renew deadline of the last successful renewal has not passed."""
        return self.is_leader and trio.current_time() < self.valid_until

    def holds_lease_at(self, monotonic_now: float) -> bool:
        """``holds_lease`` at an instant of ``time.monotonic()``."""
        return self.is_leader and monotonic_now < self._valid_until_monotonic

    def fence(self) -> Fence:
        opts = self.options
        return Fence(
            self.holds_lease,
            self.holds_lease_at,
            lease=f"leader lease {opts.namespace}/{opts.name}",
        )

    # -- running ----------------------------------------------------------------------------

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Acquire the lease, then run ``lead()`` while renewing it.

        Returns when ``lead`` returns (releasing the lease if configured). Raises
        ``LeadershipLost`` — after cancelling ``lead`` — when renewal fails or another identity
        is seen holding the lease.
        """
        await self._acquire()
        lost: str | None = None
        try:
            async with trio.open_nursery() as nursery:

                async def lead_then_stop() -> None:
                    await lead()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(lead_then_stop)
                lost = await self._renew_until_failure()
                nursery.cancel_scope.cancel()
        finally:
            self._set_leader(False)
            if lost is None and self.options.release_on_cancel:
                with trio.CancelScope(shield=True), trio.move_on_after(self.options.retry_period):
                    await self._release()
        if lost is not None:
            raise LeadershipLost(f"lease {self.options.namespace}/{self.options.name}: {lost}")

    async def _acquire(self) -> None:
        self._log.info("attempting to acquire leader lease")
        while await self._try_acquire_or_renew() is not Outcome.HELD:
            if self._refused is not None and self.renewed_at == -math.inf:
                raise self._refused  # never led yet: a retry would meet the same refusal
            period = self.options.retry_period
            await trio.sleep(period + self._rng.random() * ACQUIRE_JITTER * period)
        self._set_leader(True)
        self._log.info("acquired leader lease")

    async def _renew_until_failure(self) -> str:
        """Renew every retry period until leadership ends; why it ended.

        The renewals are bounded by the absolute deadline of the last success, not by a fresh
        window per attempt: time spent frozen or failing counts against it.
        """
        while True:
            with trio.move_on_at(self.valid_until):
                await trio.sleep(self.options.retry_period)
                # Polling is the protocol here: the lease lives on the API server.
                while (outcome := await self._try_acquire_or_renew()) is Outcome.FAILED:  # noqa: ASYNC110
                    await trio.sleep(self.options.retry_period)
                if outcome is Outcome.OTHER:
                    self._log.error(
                        "leader lease is held by another identity, stepping down",
                        holder=self.observed_holder,
                    )
                    return f"held by {self.observed_holder}"
                continue
            self._log.error("failed to renew leader lease, stepping down")
            return f"not renewed within {self.options.renew_deadline:g}s"

    def _set_leader(self, leading: bool) -> None:
        self.is_leader = leading
        if not leading:
            self.valid_until = self._valid_until_monotonic = -math.inf
        if self._gauge is not None:
            self._gauge.set(1 if leading else 0)

    def _proven(self, sent_at: float, sent_at_monotonic: float) -> None:
        """A write sent at ``sent_at`` succeeded: leadership holds until its renew deadline."""
        self.renewed_at = sent_at
        self.valid_until = sent_at + self.options.renew_deadline
        self._valid_until_monotonic = sent_at_monotonic + self.options.renew_deadline

    async def _try_acquire_or_renew(self) -> Outcome:
        opts = self.options
        now = micro_time()
        try:
            lease = await self.client.get_or_none(Lease, opts.name, namespace=opts.namespace)
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
                body.metadata.labels = dict(opts.labels)
                sent_at, sent_at_monotonic = trio.current_time(), time.monotonic()
                created = await self.client.create(Lease, body)
                self._proven(sent_at, sent_at_monotonic)
                self._observe(created)
                return Outcome.HELD
            self._observe(lease)
            record = lease.spec
            holder = record.holder_identity or ""
            if holder and holder != opts.identity:
                if self.is_leader:
                    return Outcome.OTHER  # taken over: whatever its expiry, it is not ours
                expires = self._observed_at + (record.lease_duration_seconds or opts.lease_duration)
                if expires > trio.current_time():
                    return Outcome.OTHER
            new_record = {
                "holderIdentity": opts.identity,
                "leaseDurationSeconds": round(opts.lease_duration),
                "renewTime": now,
                "acquireTime": record.acquire_time if holder == opts.identity else now,
                "leaseTransitions": (record.lease_transitions or 0)
                + (0 if holder == opts.identity else 1),
            }
            sent_at, sent_at_monotonic = trio.current_time(), time.monotonic()
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
            self._proven(sent_at, sent_at_monotonic)
            self._observe(updated)
            return Outcome.HELD
        except ApiError as error:
            if not is_already_exists(error) and error.status not in (409, 422):
                self._log.warning("leader lease request failed", error=str(error))
            self._refused = lease_refusal(opts.namespace, opts.name, error)
            return Outcome.FAILED

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
            lease = await self.client.get_or_none(Lease, opts.name, namespace=opts.namespace)
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
