"""The sharder: keeps a ring's objects assigned to its available shards.

It runs on one replica at a time (a leader-only runnable of the manager, or a process of its
own) and is itself a small controller over two kinds of key:

* the ring: whenever a shard Lease changes, and when a state is due to change, it reads the
  ring's Leases (``LeaseObserver``), takes over the Lease of a shard that stopped renewing
  (so a restarted replica with that id must wait a whole lease duration before it acts
  again, by which time its objects have moved), deletes Leases dead for a minute, labels each
  Lease with its state, and rebuilds the ring from the available shards. A changed ring, and
  every ``sync_period``, puts every object back in the queue;
* an object: its desired shard is the ring's owner of its key. Unassigned, or assigned to a
  shard that is dead or unknown: it is labelled with the desired shard at once, after the
  objects it controls (so its new shard sees them as soon as it sees it). Assigned to another
  available shard: it gets the drain label, and only once that shard has let go (removed
  both labels) is it assigned again;
* an object with a controller owner follows the owner: it gets the owner's shard, and waits
  while the owner is drained; an owner outside the ring's kinds is hashed by its key. A kind
  that is both owned and some controller's primary kind (a MachineSet: owned by its
  MachineDeployment, reconciled by the MachineSet controller) follows its owner when it has
  one, is hashed by its own key when it has none, and is drained like any primary object
  before it moves: an owner is assigned only once everything it owns, at every level, has
  been let go of and brought along.

Every label write carries the resourceVersion the decision was made on, so a decision made on
a stale cache fails with a conflict and is made again on the newer object.

It lists and watches the sharded kinds metadata-only and keeps a ``Placement`` of each
(``metaview``): name, namespace, resourceVersion, sharding labels and controller owner, a few
hundred bytes per object whatever the kind's size.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import trio
from prometheus_client import CollectorRegistry

from kubetrio.api.coordination import Lease
from kubetrio.api.meta import KubeObject, kind_of
from kubetrio.api.registry import KindInfo
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Controller, Result, Source
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.ratelimit import ExponentialFailureRateLimiter
from kubetrio.runtime.gen.rbac import Permissions, on
from kubetrio.runtime.leaderelection.elector import micro_time
from kubetrio.runtime.sharding.labels import (
    RING_LABEL,
    STATE_LABEL,
    MetaFields,
    drain_label,
    object_key,
    owner_key,
    shard_label,
)
from kubetrio.runtime.sharding.metaview import placement_view
from kubetrio.runtime.sharding.metrics import ShardingMetrics, sharding_metrics
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.ring import Ring
from kubetrio.runtime.sharding.shards import SHARDER_IDENTITY, LeaseObserver, Shard, ShardState
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.sharding")

# The ring's Leases in the shards' namespace: watched, taken over, labelled, deleted when orphaned.
RBAC = Permissions(own_namespace=(on(Lease.KIND, "list", "watch", "patch", "delete"),))

RING_KEY: tuple[int, str, str] = (-1, "", "")
COUNT_PERIOD = 5.0  # seconds between counts of objects per shard
OWNER_INDEX = "sharding-owner"
# Owner chains are followed this deep (MachineDeployment → MachineSet → Machine is 2).
MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class ShardedKind:
    """A kind in the ring: a controller's primary kind, or one it owns (``controlled``), whose
    objects follow their controller owner; in ``namespace`` (all when None) and matching
    ``label_selector``, as the controller watches them. An owned kind that is also a
    controller's primary kind is ``reconciled``: its objects are drained before they move, and
    one without an owner is hashed by its own key."""

    kind: type[KubeObject]
    controlled: bool = False
    namespace: str | None = None
    label_selector: str | None = None
    reconciled: bool = False

    @property
    def drains(self) -> bool:
        """Whether a move from a live shard goes through the drain handshake: a controller
        reconciles these objects by their own key."""
        return not self.controlled or self.reconciled


def rbac_for(kinds: Sequence[ShardedKind]) -> Permissions:
    """The sharder's needs for a ring of ``kinds``: its Leases, and every sharded kind listed,
    watched (metadata only) and labelled."""
    rules = tuple(on(kind_of(k.kind), "list", "watch", "patch") for k in kinds)
    return RBAC + Permissions(cluster=rules)


class Sharder:
    """See the module's docstring. ``reader`` lists and watches (any replica may);
    ``writer`` labels objects and takes Leases over (the manager's leader-fenced client)."""

    needs_leader_election = True

    def __init__(
        self,
        reader: Client,
        writer: Client,
        options: ShardingOptions,
        kinds: Sequence[ShardedKind],
        *,
        registry: CollectorRegistry | None = None,
        leases: Informer[Lease] | None = None,
    ) -> None:
        """``leases``: the ring's Leases in a cache that runs on every replica (the manager's):
        watched from the start, a replica that becomes leader already knows how long each
        Lease has stood still, so a shard that died with the old leader is not given a
        second lease duration."""
        if not kinds:
            raise ValueError(f"sharder for ring {options.ring}: no sharded kinds")
        self.reader = reader
        self.writer = writer
        self.options = options
        self.kinds = list(kinds)
        self.ring: Ring | None = None
        self._follower_ring: Ring | None = None
        self.shards: dict[str, Shard] = {}
        self.registry = registry
        self.metrics: ShardingMetrics | None = sharding_metrics(registry) if registry else None
        self._observer = LeaseObserver()
        self._shard_label = shard_label(options.ring)
        self._drain_label = drain_label(options.ring)
        self._drains_started: dict[tuple[int, str, str], float] = {}
        self._next_full_sync = -math.inf
        self._next_count = -math.inf
        self._leases = leases
        if leases is not None:
            observe = self._observe
            leases.add_handler(
                EventHandler(
                    on_add=lambda lease, _initial: observe(lease),
                    on_update=lambda _old, new: observe(new),
                )
            )
        self._views: list[Informer[Any]] = []
        self._owner_kinds: dict[str, int] = {}
        self._controller: Controller[Hashable] | None = None
        self._stopping = False
        self.synced = trio.Event()
        self._log = log.bind(ring=options.ring)

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        opts = self.options
        cache = InformerCache(self.reader)
        if self._leases is None:
            self._leases = cache.informer(
                Lease, namespace=opts.namespace, label_selector=self.lease_selector
            )
        self._views = [
            cache.informer(
                placement_view(k.kind), namespace=k.namespace, label_selector=k.label_selector
            )
            for k in self.kinds
        ]
        for sharded, view in zip(self.kinds, self._views, strict=True):
            if sharded.controlled:
                view.add_index(OWNER_INDEX, _by_owner)
        self._owner_kinds = {self._kind_prefix(k.kind): i for i, k in enumerate(self.kinds)}
        controller: Controller[Hashable] = Controller(
            f"sharder-{opts.ring}",
            self,
            workers=opts.concurrent_moves,
            # Per key only, without the default's overall 10 a second: nearly every failure
            # here is a conflict (the object's own controller wrote it since the decision was
            # made), and a ring change races thousands of writes at once; the overall bucket
            # would trickle their retries out for minutes, holding the moves back. The
            # concurrency is bounded by the workers already.
            rate_limiter=ExponentialFailureRateLimiter(base=0.005, cap=opts.lease_duration),
            registry=self.registry,
        )
        controller.watch(Source(self._leases, lambda _lease: (RING_KEY,)))
        relevant = Predicate(update=self._assignment_changed)
        for index, informer in enumerate(self._views):
            controller.watch(Source(informer, self._keys_of(index), (relevant,)))
        self._controller = controller
        async with trio.open_nursery() as nursery:
            await nursery.start(cache.run)
            await cache.wait_for_sync()
            self.synced.set()
            self._log.info("sharder started", kinds=[kind_of(k.kind).kind for k in self.kinds])
            controller.queue.add(RING_KEY)
            if not self._stopping:
                await controller.run()
            nursery.cancel_scope.cancel()

    @property
    def lease_selector(self) -> str:
        return f"{RING_LABEL}={self.options.ring}"

    def current_ring(self) -> Ring:
        """The ring as this replica sees it now: the leader's own, else one built from the
        shared Lease watch (answers the admission webhook on every replica)."""
        if self.ring is not None:
            return self.ring
        if self._leases is None:
            return Ring(())
        now = trio.current_time()
        available = frozenset(
            shard.id
            for lease in self._leases.lister.list()
            if (shard := self._observer.shard(lease, now)).state.available
        )
        if self._follower_ring is None or self._follower_ring.members != available:
            self._follower_ring = Ring(available)
        return self._follower_ring

    def _observe(self, lease: Lease) -> None:
        self._observer.shard(lease, trio.current_time())

    def stop(self) -> None:
        self._stopping = True
        if self._controller is not None:
            self._controller.stop()

    async def reconcile(self, key: Hashable) -> Result:
        if key == RING_KEY:
            return await self._sync_ring()
        assert isinstance(key, tuple)
        index: int = key[0]
        namespace: str = key[1]
        name: str = key[2]
        await self._assign(index, namespace, name)
        return Result()

    # -- the ring -------------------------------------------------------------------------

    async def _sync_ring(self) -> Result:
        assert self._leases is not None
        now = trio.current_time()
        shards: dict[str, Shard] = {}
        for lease in self._leases.lister.list():
            shard = self._observer.shard(lease, now)
            if shard.state is ShardState.UNCERTAIN and await self._take_over(lease):
                shard = Shard(shard.id, ShardState.DEAD, 0.0)
            elif shard.state is ShardState.ORPHANED:
                await self._delete(lease)
                continue
            await self._label_state(lease, shard.state)
            shards[shard.id] = shard
        self.shards = shards
        available = frozenset(s.id for s in shards.values() if s.state.available)
        if self.ring is None or available != self.ring.members:
            self._log.info("ring changed", shards=sorted(available))
            self.ring = Ring(available)
            if self.metrics is not None:
                self.metrics.ring_calculations.labels(self.options.ring).inc()
            self._enqueue_all()
        elif now >= self._next_full_sync:
            self._enqueue_all()
        if now >= self._next_full_sync:
            self._next_full_sync = now + self.options.sync_period
        if now >= self._next_count:
            self._next_count = now + COUNT_PERIOD
            self._count(shards)
        waits = [s.next_change for s in shards.values() if s.next_change > 0]
        waits.append(min(self._next_full_sync, self._next_count) - now)
        return Result(requeue_after=max(min(waits), 0.01))

    def _enqueue_all(self) -> None:
        assert self._controller is not None
        add = self._controller.queue.add
        for index, informer in enumerate(self._views):
            for key in informer.store.keys():  # noqa: SIM118 (a Store, not a dict)
                add((index, key.namespace, key.name))

    def _count(self, shards: dict[str, Shard]) -> None:
        metrics = self.metrics
        if metrics is None:
            return
        counts = dict.fromkeys(shards, 0)
        for informer in self._views:
            for obj in informer.store.values():
                owner = obj.metadata.labels.get(self._shard_label)
                if owner is not None:
                    counts[owner] = counts.get(owner, 0) + 1
        for shard_id, count in counts.items():
            metrics.objects.labels(self.options.ring, shard_id).set(count)
        by_state = dict.fromkeys((s.value for s in ShardState), 0)
        for shard in shards.values():
            by_state[shard.state.value] += 1
        for state, count in by_state.items():
            metrics.shards.labels(self.options.ring, state).set(count)

    async def _take_over(self, lease: Lease) -> bool:
        """Hold a silent shard's Lease, so its objects can move without a drain."""
        now = micro_time()
        spec = lease.spec
        try:
            await self.writer.patch(
                Lease,
                lease.metadata.name,
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
                            "holderIdentity": SHARDER_IDENTITY,
                            "leaseDurationSeconds": spec.lease_duration_seconds
                            or round(self.options.lease_duration),
                            "acquireTime": now,
                            "renewTime": now,
                            "leaseTransitions": (spec.lease_transitions or 0) + 1,
                        },
                    },
                ],
                namespace=lease.metadata.namespace,
                patch_type="json",
            )
        except ApiError as error:
            self._log.info(
                "could not take over shard lease", shard=lease.metadata.name, error=str(error)
            )
            return False
        self._log.warning("shard stopped renewing: took its lease over", shard=lease.metadata.name)
        return True

    async def _delete(self, lease: Lease) -> None:
        try:
            await self.writer.delete(Lease, lease.metadata.name, namespace=lease.metadata.namespace)
        except ApiError as error:
            if error.status != 404:
                raise
        self._observer.forget(lease.metadata.name)

    async def _label_state(self, lease: Lease, state: ShardState) -> None:
        if lease.metadata.labels.get(STATE_LABEL) == state.value:
            return
        try:
            await self.writer.patch(
                Lease,
                lease.metadata.name,
                {"metadata": {"labels": {STATE_LABEL: state.value}}},
                namespace=lease.metadata.namespace,
            )
        except ApiError as error:
            if error.status != 404:
                raise

    # -- objects --------------------------------------------------------------------------

    def _available(self, shard_id: str) -> bool:
        shard = self.shards.get(shard_id)
        return shard is not None and shard.state.available

    async def _assign(self, index: int, namespace: str, name: str) -> None:
        sharded = self.kinds[index]
        obj = self._views[index].lister.get(namespace, name)
        item = (index, namespace, name)
        if obj is None or self.ring is None:
            self._drains_started.pop(item, None)
            return
        meta = obj.metadata
        desired = self._desired(sharded, meta)
        if desired is None:
            return  # no shard available, not in the ring, or waiting for its owner
        current = meta.labels.get(self._shard_label)
        draining = self._drain_label in meta.labels
        if current == desired:
            if not draining:
                self._drained(item)  # assigned anew, by the webhook as the shard let go
            return  # a drain asked for meanwhile is let go of and the object comes back here
        info = kind_of(sharded.kind)
        if current is not None and self._available(current) and sharded.drains:
            if not draining:
                await self._drain(obj, item, info)
            return
        # What it owns goes first: its new shard finds them in its cache when it first sees
        # the owner, instead of taking them for missing.
        if not await self._bring_owned(object_key(sharded.kind, meta), desired, 0):
            return  # some are still being let go of: their events bring the owner back here
        await self._write(obj, {self._shard_label: desired, self._drain_label: None})
        self._moved(info)
        self._drained(item)

    def _desired(self, sharded: ShardedKind, meta: MetaFields) -> str | None:
        """The shard an object belongs on; None while it must wait (or is not in the ring)."""
        assert self.ring is not None
        if sharded.controlled and (not sharded.reconciled or meta.controller_ref() is not None):
            return self._owned_shard(meta)
        return self.ring.owner(object_key(sharded.kind, meta))

    async def _drain(self, obj: KubeObject, item: tuple[int, str, str], info: KindInfo) -> None:
        await self._write(obj, {self._drain_label: "true"})
        self._drains_started[item] = trio.current_time()
        if self.metrics is not None:
            self.metrics.drains.labels(self.options.ring, info.group, info.plural).inc()

    def _drained(self, item: tuple[int, str, str]) -> None:
        started = self._drains_started.pop(item, None)
        if started is not None and self.metrics is not None:
            self.metrics.drain_duration.labels(self.options.ring).observe(
                trio.current_time() - started
            )

    def _assignment_changed(self, old: KubeObject, new: KubeObject) -> bool:
        """Only a change of what assignment reads wakes the sharder (its shard and drain
        labels, its controller owner): a controller's writes to its objects cost it nothing
        but their decoding."""
        before, after = old.metadata, new.metadata
        return (
            before.labels.get(self._shard_label) != after.labels.get(self._shard_label)
            or (self._drain_label in before.labels) != (self._drain_label in after.labels)
            or before.controller_ref() != after.controller_ref()
        )

    def _keys_of(self, index: int) -> Any:
        """An object's key; for an owner the keys of what it controls (they follow it); for
        an owned object its owners' up the chain (an owner waits for what it owns to be let
        go of, and moves on when it has)."""
        owned_views = [(i, view) for i, view in enumerate(self._views) if self.kinds[i].controlled]
        sharded = self.kinds[index]

        def keys(obj: KubeObject) -> list[tuple[int, str, str]]:
            meta = obj.metadata
            found = [(index, meta.namespace, meta.name)]
            key = object_key(sharded.kind, meta)
            for i, view in owned_views:
                for owned in view.store.values_by_index(OWNER_INDEX, key):
                    found.append((i, owned.metadata.namespace, owned.metadata.name))
            for _ in range(MAX_DEPTH):
                owner_of = owner_key(meta)
                if owner_of is None:
                    break
                prefix, _namespace, name = owner_of.rsplit("/", 2)
                owner_index = self._owner_kinds.get(f"{prefix}/")
                owner = (
                    None
                    if owner_index is None
                    else self._views[owner_index].lister.get(meta.namespace, name)
                )
                if owner is None or owner_index is None:
                    break
                found.append((owner_index, meta.namespace, name))
                meta = owner.metadata
            return found

        return keys

    def owner_in_ring(self, key: str) -> bool:
        """Whether the owner of ring key ``key`` is of one of the ring's kinds."""
        return any(key.startswith(self._kind_prefix(k.kind)) for k in self.kinds)

    def owned_shard(self, meta: MetaFields) -> str | None:
        """Where an owned object belongs now (the admission webhook's question)."""
        return self._owned_shard(meta) if self.ring is not None else None

    def _owned_shard(self, meta: MetaFields) -> str | None:
        """Where an owned object belongs: its owner's shard once the owner is where the ring
        wants it, itself following an owner of its own if it has one (None while the owner
        is drained or is yet to move: its assignment brings the owned objects along); the
        ring's choice for its owner's key when the owner is not one of the ring's objects."""
        key = owner_key(meta)
        if key is None or self.ring is None:
            return None  # owned by nothing: not part of the ring
        for index, sharded in enumerate(self.kinds):
            if not key.startswith(self._kind_prefix(sharded.kind)):
                continue
            ref = meta.controller_ref()
            assert ref is not None
            owner = self._views[index].lister.get(meta.namespace, ref.name)
            if owner is None:
                break
            labels: dict[str, str] = owner.metadata.labels
            current = labels.get(self._shard_label)
            if self._drain_label in labels or current != self._desired(sharded, owner.metadata):
                # The owner is to move (or this view of it is older than our last write):
                # its assignment brings what it owns along.
                return None
            return current
        return self.ring.owner(key)

    @staticmethod
    def _kind_prefix(kind: type[KubeObject]) -> str:
        info = kind_of(kind)
        return f"{info.group}/{info.kind}/"

    async def _bring_owned(self, key: str, shard: str, depth: int) -> bool:
        """Put what the object of ring key ``key`` controls on ``shard``, and what that
        controls, first. An owned object a controller reconciles by its own key and that sits
        on another live shard is drained instead; False while any is still to be let go of."""
        settled = True
        for index, sharded in enumerate(self.kinds):
            if not sharded.controlled:
                continue
            info = kind_of(sharded.kind)
            for owned in list(self._views[index].store.values_by_index(OWNER_INDEX, key)):
                meta = owned.metadata
                current = meta.labels.get(self._shard_label)
                draining = self._drain_label in meta.labels
                if current == shard:
                    settled = settled and not draining
                    continue
                if depth + 1 < MAX_DEPTH and not await self._bring_owned(
                    object_key(sharded.kind, meta), shard, depth + 1
                ):
                    settled = False
                    continue
                item = (index, meta.namespace, meta.name)
                if sharded.drains and current is not None and self._available(current):
                    if not draining:
                        await self._drain(owned, item, info)
                    settled = False
                    continue
                await self._write(owned, {self._shard_label: shard, self._drain_label: None})
                self._moved(info)
                self._drained(item)
        return settled

    def _moved(self, info: KindInfo) -> None:
        if self.metrics is not None:
            self.metrics.movements.labels(self.options.ring, info.group, info.plural).inc()

    async def _write(self, obj: KubeObject, labels: dict[str, str | None]) -> None:
        meta = obj.metadata
        try:
            await self.writer.patch(
                type(obj),
                meta.name,
                {"metadata": {"resourceVersion": meta.resource_version, "labels": labels}},
                namespace=meta.namespace,
            )
        except ApiError as error:
            if error.status != 404:
                raise  # a conflict: retried, and the newer object comes through the watch


def _by_owner(obj: KubeObject) -> list[str]:
    key = owner_key(obj.metadata)
    return [key] if key is not None else []
