"""Builder-style controller registration (controller-runtime's ``builder``).

    manager.controller("replicas").for_(ReplicaSet).owns(Pod).workers(4).complete(reconciler)

``for_`` reconciles the object itself, ``owns`` maps an owned object to its controlling owner
(``ownerReferences`` with ``controller: true``), ``watches`` maps anything with a function.
All sources share the manager's informers. ``for_`` and ``watches`` take ``cluster=`` (a
``manager.cluster(...)``) to watch a kind in another cluster's cache, as controller-runtime's
``source.Kind(otherCluster.GetCache(), …)``: the machine controller maps Nodes of the target
cluster to Machines of the control cluster.

``sharded()`` spreads the controller's objects over the replicas of the manager's ring
(``kubetrio.runtime.sharding``): its ``for_`` and ``owns`` informers select this shard's label,
so each replica caches and reconciles only the objects assigned to it, and the reconciler is
gated to honour the sharder's drain label.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Self

from kubetrio.api.meta import KubeObject, kind_of
from kubetrio.runtime.controller.controller import Controller, Mapper, Reconciler, Source
from kubetrio.runtime.controller.predicates import Predicate
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.controller.ratelimit import RateLimiter
from kubetrio.runtime.manager.cluster import Cluster
from kubetrio.runtime.sharding.gate import ShardGate
from kubetrio.runtime.sharding.labels import shard_label
from kubetrio.runtime.sharding.metrics import sharding_metrics
from kubetrio.runtime.sharding.sharder import ShardedKind

if TYPE_CHECKING:
    from kubetrio.runtime.manager.manager import Manager


def object_key(obj: KubeObject) -> Iterable[ObjectKey]:
    """Map an object to its own key: what ``for_`` watches with."""
    return (ObjectKey(obj.metadata.namespace, obj.metadata.name),)


def controller_owner(owner_kind: type[KubeObject], every_owner: bool = False) -> Mapper[ObjectKey]:
    """Map an object to its owner(s) of ``owner_kind`` (only the controlling one by default)."""
    info = kind_of(owner_kind)

    def owners(obj: KubeObject) -> Iterable[ObjectKey]:
        namespace = obj.metadata.namespace if info.namespaced else ""
        return [
            ObjectKey(namespace, ref.name)
            for ref in obj.metadata.owner_references
            if ref.kind == info.kind
            and ref.api_version.split("/")[0] == info.api_version.split("/")[0]
            and (every_owner or ref.controller)
        ]

    return owners


class ControllerBuilder:
    """What ``manager.controller(name)`` returns: say what the controller is ``for_`` (its
    primary kind), what it ``owns`` and ``watches`` (mapped to the keys to reconcile), the
    predicates and worker count, then ``complete(reconciler)`` registers it with the
    manager, as controller-runtime's builder does."""

    def __init__(self, manager: Manager, name: str) -> None:
        self._manager = manager
        self._name = name
        self._for: type[KubeObject] | None = None
        self._sources: list[
            tuple[
                type[KubeObject],
                Mapper[ObjectKey],
                tuple[Predicate, ...],
                dict[str, Any],
                Cluster | None,
            ]
        ] = []
        self._global_predicates: tuple[Predicate, ...] = ()
        self._workers: int | None = None
        self._rate_limiter: RateLimiter | None = None
        self._needs_leader = True
        self._sharded = False
        self._owned: list[type[KubeObject]] = []

    def for_(
        self,
        kind: type[KubeObject],
        *predicates: Predicate,
        cluster: Cluster | None = None,
        **selection: Any,
    ) -> Self:
        """Reconcile objects of ``kind`` by their own key. Call once."""
        if self._for is not None:
            raise ValueError(f"controller {self._name}: for_() was already called")
        kind_of(kind)  # an undeclared class fails here, naming the fix, not at the first LIST
        self._for = kind
        self._sources.append((kind, object_key, predicates, selection, cluster))
        return self

    def owns(
        self,
        kind: type[KubeObject],
        *predicates: Predicate,
        every_owner: bool = False,
        **selection: Any,
    ) -> Self:
        """Reconcile the for_() owner of objects of ``kind``."""
        if self._for is None:
            raise ValueError(f"controller {self._name}: call for_() before owns()")
        kind_of(kind)
        mapper = controller_owner(self._for, every_owner)
        self._sources.append((kind, mapper, predicates, selection, None))
        self._owned.append(kind)
        return self

    def watches(
        self,
        kind: type[KubeObject],
        mapper: Mapper[ObjectKey],
        *predicates: Predicate,
        cluster: Cluster | None = None,
        **selection: Any,
    ) -> Self:
        """Reconcile whatever keys ``mapper`` derives from objects of ``kind``.

        ``selection`` (namespace, label_selector, field_selector) narrows the informer;
        ``cluster`` watches it in that cluster (default: the manager's primary one).
        """
        self._sources.append((kind, mapper, predicates, selection, cluster))
        return self

    def with_event_filter(self, *predicates: Predicate) -> Self:
        """Predicates applied to every source."""
        self._global_predicates += predicates
        return self

    def workers(self, count: int) -> Self:
        """Reconcile up to ``count`` keys at once (never one key twice); 1 by default."""
        self._workers = count
        return self

    def rate_limiter(self, limiter: RateLimiter) -> Self:
        """How failed keys are retried; by default client-go's
        (``kubetrio.runtime.controller.ratelimit.default_controller_rate_limiter``)."""
        self._rate_limiter = limiter
        return self

    def without_leader_election(self) -> Self:
        """Run on every replica, leader or not (for read-only or idempotent local work)."""
        self._needs_leader = False
        return self

    def sharded(self) -> Self:
        """Spread this controller's objects over the ring's replicas (``Manager(sharding=…)``):
        each replica reconciles only the ``for_`` objects labelled with its shard, their owned
        objects following them. It runs on every replica while that replica holds its shard
        Lease, not on the leader only; its reconciler should write through
        ``manager.shard.client``, which that Lease fences."""
        if self._manager.shard is None:
            raise ValueError(
                f"controller {self._name}: sharded() needs the manager's sharding options "
                "(Manager(sharding=ShardingOptions(ring=..., namespace=...)))"
            )
        self._sharded = True
        return self

    def complete(self, reconciler: Reconciler[ObjectKey]) -> Controller[ObjectKey]:
        """Register the controller with the manager, which starts it once the caches synced
        (and, unless ``without_leader_election``, once elected; sharded, once it holds its
        shard Lease)."""
        if not self._sources:
            raise ValueError(f"controller {self._name}: nothing to watch (call for_/watches)")
        manager = self._manager
        shard = manager.shard if self._sharded else None
        if shard is not None and self._for is None:
            raise ValueError(f"controller {self._name}: sharded() needs for_()")
        controller: Controller[ObjectKey] = Controller(
            self._name,
            reconciler,
            workers=self._workers or manager.workers_for(self._name),
            rate_limiter=self._rate_limiter,
            registry=manager.registry,
            needs_leader_election=self._needs_leader and shard is None,
        )
        primary: Any = None
        ring_kinds: list[ShardedKind] = []
        for index, (kind, mapper, predicates, selection, cluster) in enumerate(self._sources):
            cache = cluster.cache if cluster is not None else manager.cache
            if shard is not None and (index == 0 or kind in self._owned) and cluster is None:
                ring_kinds.append(
                    ShardedKind(
                        kind,
                        controlled=index > 0,
                        namespace=selection.get("namespace"),
                        label_selector=selection.get("label_selector"),
                    )
                )
                mine = f"{shard_label(shard.ring)}={shard.id}"
                given = selection.get("label_selector")
                selection = {**selection, "label_selector": f"{given},{mine}" if given else mine}
            informer = cache.informer(kind, **selection)
            if index == 0:
                primary = informer
            controller.watch(Source(informer, mapper, self._global_predicates + predicates))
        if shard is not None:
            assert self._for is not None
            if self._sources[0][4] is not None:
                raise ValueError(
                    f"controller {self._name}: a sharded controller's for_() kind must be in the "
                    "manager's own cluster (the sharder labels objects there)"
                )
            for ring_kind in ring_kinds:
                shard.shard_kind(ring_kind)
            controller.reconciler = ShardGate(
                reconciler,
                self._for,
                primary.lister,
                shard.client,
                ring=shard.ring,
                shard_id=shard.id,
                metrics=sharding_metrics(manager.registry),
                in_flight=shard.in_flight(self._for),
            )
            controller.needs_shard_lease = True
        manager.add(controller)
        return controller
