"""The manager: one nursery for the HTTP endpoints, the shared cache, controllers and loops.

Start order (controller-runtime's): HTTP server (metrics and probes, so a stuck sync is
observable) → caches synced → runnables that need no leadership → leader election →
leader-only runnables. ``/readyz`` turns ready once the caches synced and, with leader
election, once this replica knows who leads.

Stopping (``stop()``, e.g. on SIGTERM): controllers take no new keys and their in-flight
reconciles finish; whatever still runs after the grace period is cancelled; the lease is
released; ``run`` returns. ``run`` takes SIGTERM and SIGINT itself unless something else
handles them (``stopsignals``), so a script's manager stops as ``kubetrio run`` does.
Losing the lease stops leader-only work at once and makes ``run`` raise ``LeadershipLost``
(the process should exit non-zero and be restarted); a campaign refused for good before ever
leading (no such namespace, no RBAC on leases) raises ``LeaseRefused``.

Clusters added with ``add_cluster`` (another API server: MCM's target cluster) have their own
client and cache, started and synced with the primary one and probed as ``informers-<name>``;
controllers watch them with the builder's ``cluster=``.

With leader election, ``manager.client`` is fenced (``kubetrio.runtime.leaderelection.fence``):
its writes are refused with ``NotLeader`` unless the lease is proven held at that moment, so a
leader frozen past its lease acts no more when it wakes; ``manager.fence`` guards other leader-only
side effects (cloud and storage calls). ``manager.unfenced_client`` is for runnables that run
on every replica. A leader-only runnable that meets ``NotLeader`` ends with one log line.
Every cluster's client is fenced by the same lease.

With ``metrics_secure`` (``kubetrio.runtime.metrics.secure``) ``/metrics`` is served over TLS
to readers the API server authenticates and authorizes, on its own listener; the probes stay
plain HTTP. Bind addresses default to controller-runtime's: every interface, metrics on
``:8080`` (``:8443`` when secure), probes on ``:8081``.

With ``sharding`` (``kubetrio.runtime.sharding``) every replica holds a shard Lease of its own
in the ring and runs the controllers built ``.sharded()`` while it holds it, whether it leads or
not; ``manager.shard.client`` is fenced by that Lease. Losing it ends ``run`` as losing the
leader lease does. The ring's sharder runs as a leader-only runnable.

``manager.webhook(kind)`` registers admission and conversion webhooks
(``kubetrio.runtime.webhook``); their HTTPS server (``webhook_bind_address``, ``:9443``) starts
after the HTTP endpoints and before the caches, only when a webhook is registered, and
``/readyz`` waits for it.

A cache that cannot sync ends ``run`` with one plain exception (not an exception group): a
``CacheSyncError`` as soon as a LIST is refused for good (CRD missing, RBAC), or
``CacheSyncTimeout`` after ``cache_sync_timeout``. Custom kinds are looked up in discovery
before any informer starts, so missing CRDs end ``run`` at once, all named
(``UnservedKinds``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

import trio
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from kubetrio.api.coordination import Lease
from kubetrio.api.meta import KubeObject
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.cache.metrics import report_undecodable, undecodable_detail
from kubetrio.runtime.cache.syncfailure import CacheSyncError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.builder import ControllerBuilder
from kubetrio.runtime.events.recorder import EventRecorder, EventSender, dropped_counter
from kubetrio.runtime.leaderelection.elector import (
    LeaderElectionOptions,
    LeaderElector,
    LeadershipLost,
)
from kubetrio.runtime.leaderelection.fence import Fence, is_not_leader
from kubetrio.runtime.leaderelection.leasefailure import LeaseRefused
from kubetrio.runtime.manager.cluster import Cluster, check_clusters_served, wait_for_clusters
from kubetrio.runtime.manager.gctuning import GcMode, GcTuning
from kubetrio.runtime.manager.stopsignals import STOP_SIGNALS, stop_on_signals, unclaimed
from kubetrio.runtime.metrics.secure import SecureMetrics, SecureServing
from kubetrio.runtime.metrics.server import ListenError, ManagerHTTPServer
from kubetrio.runtime.sharding.labels import RING_LABEL
from kubetrio.runtime.sharding.member import ShardMember
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.sharder import ShardedKind, Sharder
from kubetrio.runtime.sharding.webhook import register as register_assigners
from kubetrio.runtime.util.log import configure_default_logging, get_logger
from kubetrio.runtime.webhook.builder import WebhookBuilder
from kubetrio.runtime.webhook.server import DEFAULT_BIND_ADDRESS, WebhookServer

log = get_logger("kubetrio.manager")
K = TypeVar("K", bound=KubeObject)


class Runnable(Protocol):
    """Anything the manager runs: controllers, periodic loops. ``run`` returns when done."""

    needs_leader_election: bool

    async def run(self) -> None: ...


@runtime_checkable
class Stoppable(Protocol):
    """A runnable that can finish its current work itself instead of being cancelled."""

    def stop(self) -> None: ...


EVENT_FLUSH_SECONDS = 5.0


def _needs_shard_lease(runnable: Runnable) -> bool:
    """A sharded controller's: runs while this replica holds its shard Lease."""
    return bool(getattr(runnable, "needs_shard_lease", False))


class CacheSyncTimeout(Exception):
    """The informers did not sync within the manager's limit; the message names the kinds
    still waiting."""


def process_registry() -> CollectorRegistry:
    """A registry with the process and Python runtime collectors (CPU, memory, open fds, GC),
    as controller-runtime's registry has the Go process collectors."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


class Manager:
    """The process's one manager: give it a client, register controllers
    (``manager.controller(name)``), webhooks and runnables, then ``await manager.run()``;
    it owns the nursery they run in, the shared cache, leader election and the metrics and
    probe endpoints, and stops them in order (see the module's docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        registry: CollectorRegistry | None = None,
        metrics_bind_address: str | None = None,
        health_probe_bind_address: str | None = None,
        metrics_secure: SecureServing | None = None,
        leader_election: LeaderElectionOptions | None = None,
        graceful_shutdown_timeout: float = 30.0,
        cache_sync_timeout: float = 120.0,
        workers: Mapping[str, int] | None = None,
        webhook_bind_address: str = DEFAULT_BIND_ADDRESS,
        webhook_cert_path: Path | None = None,
        gc: GcMode = "default",
        sharding: ShardingOptions | None = None,
    ) -> None:
        # Go's client emits no ``*_created`` series; dashboards written for it need none.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry if registry is not None else process_registry()
        self.leader_election = leader_election
        self.elector = (
            LeaderElector(client.with_own_limits(), leader_election, registry=self.registry)
            if leader_election
            else None
        )
        self.fence: Fence | None = self.elector.fence() if self.elector is not None else None
        self.unfenced_client = client
        self.client = self._fenced(client)
        self.cache = InformerCache(client)  # reads need no lease
        report_undecodable(self.registry, self.cache)
        self._primary = Cluster("", self.client, self.cache)
        self.clusters: dict[str, Cluster] = {}  # added with add_cluster, by name
        self._stood_in_for: set[str] = set()  # names cluster() answered with the primary
        self._event_senders: dict[str, EventSender] = {}  # by cluster name ("" = primary)
        self._events_dropped = dropped_counter(self.registry)
        # This replica's shard of a ring (``kubetrio.runtime.sharding``): its own Lease, held
        # on every replica; controllers built ``.sharded()`` run while it is held.
        self.shard = ShardMember(client, sharding, self.registry) if sharding else None
        self.sharder: Sharder | None = None
        self.http = ManagerHTTPServer(self.registry)
        # Serves only once manager.webhook(...) registers something (kubetrio.runtime.webhook).
        self.webhooks = WebhookServer(
            self.registry, bind_address=webhook_bind_address, cert_dir=webhook_cert_path
        )
        # The reviews change nothing: every replica makes them, lease or not (unfenced).
        self.secure_metrics = (
            SecureMetrics(metrics_secure, client, self.registry) if metrics_secure else None
        )
        if metrics_bind_address is None:
            metrics_bind_address = ":8443" if metrics_secure else ":8080"
        self.metrics_bind_address = metrics_bind_address
        self.health_probe_bind_address = (
            ":8081" if health_probe_bind_address is None else health_probe_bind_address
        )
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        self._workers = dict(workers or {})
        self.gc = GcTuning(gc)  # process-global: "default" (a library's manager) leaves it be
        self._runnables: list[Runnable] = []
        self._scopes: dict[int, trio.CancelScope] = {}
        self._stop_requested = trio.Event()
        self._work = trio.CancelScope()  # replaced by the work nursery's scope in run()
        self._startup = trio.CancelScope()  # the wait for caches; a stop() meanwhile ends it
        self._leadership_lost: LeadershipLost | LeaseRefused | None = None
        # Why the start failed; raised by run() outside every nursery, so callers see it bare.
        self._sync_failure: CacheSyncError | CacheSyncTimeout | ListenError | None = None
        self.bound_ports: dict[str, int] = {}  # "metrics" / "probes" -> port, once serving
        self.serving = trio.Event()
        self.http.add_healthz_check("ping", lambda: None)
        self.http.add_readyz_check("informers", partial(self._informers_ready, self._primary))
        if self.elector is not None:
            self.http.add_readyz_check("leader-election", self._leadership_known)

    # -- registration ---------------------------------------------------------------------

    def controller(self, name: str) -> ControllerBuilder:
        """Start declaring the controller ``name``: ``.for_(Kind)``, ``.owns``, ``.watches``,
        predicates, ``.workers(n)``, then ``.complete(reconciler)`` registers it."""
        return ControllerBuilder(self, name)

    def webhook(self, kind: type[K]) -> WebhookBuilder[K]:
        """Register ``kind``'s defaulter, validator or converter (``kubetrio.runtime.webhook``);
        ``/readyz`` then waits for the webhook server."""
        if "webhook" not in self.http.readyz.names():
            self.http.add_readyz_check("webhook", self.webhooks.started_check)
        return WebhookBuilder(self.webhooks, kind)

    def add(self, runnable: Runnable) -> None:
        """Run ``runnable`` with the manager: started once the caches synced (and, when it
        needs leadership, once elected), stopped with it."""
        self._runnables.append(runnable)

    def add_cluster(self, name: str, client: Client) -> Cluster:
        """Another cluster with its own cache, started and synced with the primary one and
        checked by ``/readyz`` as ``informers-<name>`` (call before ``run``)."""
        if not name or name in self.clusters:
            raise ValueError(f"cluster name {name!r} is empty or already added")
        if name in self._stood_in_for:
            raise ValueError(
                f"cluster {name!r} added after something asked for it and got the primary "
                "cluster instead: add clusters before setting up the controllers that use them"
            )
        cluster = Cluster(name, self._fenced(client), InformerCache(client))
        report_undecodable(self.registry, cluster.cache)
        self.clusters[name] = cluster
        self.http.add_readyz_check(f"informers-{name}", partial(self._informers_ready, cluster))
        return cluster

    def _fenced(self, client: Client) -> Client:
        """What leader-only work writes through: refused the moment the lease is unproven."""
        return client.fenced(self.fence) if self.fence is not None else client

    def cluster(self, name: str) -> Cluster:
        """The cluster added as ``name``; the primary one when none was: one API server then
        plays every role (MCM's default, where the control cluster is the target cluster)."""
        cluster = self.clusters.get(name)
        if cluster is None:
            self._stood_in_for.add(name)
            return self._primary
        return cluster

    def event_recorder(
        self, name: str, cluster: str = "", *, sharded: bool = False
    ) -> EventRecorder:
        """Records Events as component ``name`` into ``cluster`` (the primary by default)
        through that cluster's one background sender (``kubetrio.runtime.events.recorder``);
        ``sharded``: a sharded controller's, fenced by the shard Lease like its writes."""
        target = self.cluster(cluster) if cluster else self._primary
        key = f"{target.name}/shard" if sharded else target.name
        sender = self._event_senders.get(key)
        if sender is None:
            client = self.shard_client(cluster) if sharded else target.client
            sender = EventSender(client, self._events_dropped)
            self._event_senders[key] = sender
        return sender.recorder(name)

    def shard_client(self, cluster: str = "") -> Client:
        """``cluster``'s client (the primary's by default) fenced by this replica's shard
        Lease: what a sharded controller writes through, leader or not."""
        if self.shard is None:
            raise ValueError("shard_client: the manager has no sharding options")
        if not cluster:
            return self.shard.client
        return self.cluster(cluster).cache.client.fenced(self.shard.fence)

    def workers_for(self, name: str) -> int:
        """How many workers controller ``name`` gets: the ``workers`` mapping's, else 1."""
        return self._workers.get(name, 1)

    @property
    def runnables(self) -> list[Runnable]:
        return list(self._runnables)

    # -- probes ---------------------------------------------------------------------------

    def _informers_ready(self, cluster: Cluster) -> str | None:
        if not cluster.cache.synced:
            pending = ", ".join(cluster.pending())
            return cluster.describe("informers have not synced yet") + f": {pending}"
        return undecodable_detail(cluster.cache)

    def _leadership_known(self) -> str | None:
        elector = self.elector
        if elector is None or elector.is_leader or elector.observed_holder is not None:
            return None
        return "leader election has not observed the lease yet"

    # -- running --------------------------------------------------------------------------

    def stop(self) -> None:
        """Begin a graceful shutdown; ``run`` returns once it is done."""
        self._stop_requested.set()
        self._startup.cancel()  # still waiting for caches: nothing to finish, just leave

    async def run(
        self,
        *,
        handle_signals: bool | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run everything until ``stop`` (or cancellation); ``started`` once caches synced.

        SIGTERM and SIGINT stop it as ``kubetrio run`` does (a second one cancels what still
        runs): ``handle_signals`` None takes those nobody else handles (``stopsignals``),
        True both, False none. Logs go to stderr unless logging was configured already."""
        configure_default_logging()
        self._add_sharder()
        secure = self.secure_metrics
        if secure is not None and self.metrics_bind_address.strip() not in ("", "0"):
            # A certificate that cannot serve: one plain error, at once (outside any nursery,
            # which would wrap it in an exception group).
            await secure.load()
        if self.webhooks.enabled:
            await self.webhooks.load()  # the same: a certificate that cannot serve fails here
        signals = (
            unclaimed() if handle_signals is None else (STOP_SIGNALS if handle_signals else ())
        )
        self.gc.start()
        try:
            async with trio.open_nursery() as outer:
                if signals:
                    await outer.start(
                        stop_on_signals, signals, self.stop, outer.cancel_scope.cancel
                    )
                await self._run(task_status)
                outer.cancel_scope.cancel()
        finally:
            self.gc.restore()
        # Raised out here, outside every nursery, so the caller sees them bare.
        if self._sync_failure is not None:
            raise self._sync_failure
        if self._leadership_lost is not None:
            raise self._leadership_lost  # the elector's reason: not renewed, or who took over
        log.info("manager stopped")

    async def _run(self, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as root:
            try:
                await self._start_http(root)
            except ListenError as error:
                self._sync_failure = error
                root.cancel_scope.cancel()
                return
            clusters = [self._primary, *self.clusters.values()]
            with self._startup:
                try:
                    await check_clusters_served(clusters)  # before any informer's 404s
                    for cluster in clusters:
                        await root.start(cluster.cache.run)
                    with trio.fail_after(self.cache_sync_timeout):
                        await wait_for_clusters(clusters)
                except trio.TooSlowError:
                    pending = [c.describe(", ".join(c.pending())) for c in clusters if c.pending()]
                    self._sync_failure = CacheSyncTimeout(
                        f"informers for {' and '.join(pending)} did not sync within "
                        f"{self.cache_sync_timeout:g}s"
                    )
                except CacheSyncError as error:
                    self._sync_failure = error
            if self._stop_requested.is_set() or self._sync_failure is not None:
                root.cancel_scope.cancel()
                return
            log.info("caches synced", informers=sum(len(c.cache.informers) for c in clusters))
            self.gc.synced()  # what the caches hold now lives as long as the manager
            for sender in self._event_senders.values():
                root.start_soon(sender.run)
            task_status.started()
            async with trio.open_nursery() as supervision:
                supervision.start_soon(self._stop_when_asked)
                async with trio.open_nursery() as work:
                    self._work = work.cancel_scope
                    work.start_soon(self._stop_requested.wait)  # run until asked to stop
                    for runnable in self._runnables:
                        if _needs_shard_lease(runnable):
                            continue
                        if not runnable.needs_leader_election or self.elector is None:
                            work.start_soon(self._run_one, runnable)
                    if self.elector is not None:
                        work.start_soon(self._lead)
                    if self.shard is not None:
                        work.start_soon(self._hold_shard, self.shard)
                supervision.cancel_scope.cancel()
            await self._flush_events()
            root.cancel_scope.cancel()

    async def _flush_events(self) -> None:
        """Send what the stopped controllers recorded last, for a few seconds at most."""
        for sender in self._event_senders.values():
            sender.close()
        with trio.move_on_after(EVENT_FLUSH_SECONDS):
            for sender in self._event_senders.values():
                await sender.closed.wait()

    async def _start_http(self, nursery: trio.Nursery) -> None:
        metrics, probes = self.metrics_bind_address, self.health_probe_bind_address
        secure = self.secure_metrics
        plans = (
            [(metrics, "all", ("metrics", "probes"))]
            if metrics == probes and secure is None
            else [
                (metrics, {"metrics"}, ("metrics",)),
                (probes, {"healthz", "readyz"}, ("probes",)),
            ]
        )
        if secure is not None:
            nursery.start_soon(secure.run)
        for address, endpoints, labels in plans:
            serve = self.http.serve
            if secure is not None and labels == ("metrics",):
                serve = partial(serve, tls=secure.ssl_context, metrics_filter=secure.check)
            listening = await nursery.start(serve, address, endpoints)
            if listening is not None:
                for label in labels:
                    self.bound_ports[label] = listening.port
        # Webhooks before caches (controller-runtime's order): a conversion webhook may be
        # what the caches need to list a CRD's objects.
        listening = await nursery.start(self.webhooks.serve)
        if listening is not None:
            self.bound_ports["webhook"] = listening.port
        self.serving.set()

    async def _run_one(self, runnable: Runnable) -> None:
        with trio.CancelScope() as scope:
            self._scopes[id(runnable)] = scope
            try:
                await runnable.run()
            except Exception as error:
                if not is_not_leader(error):
                    raise
                # The elector is stepping down (its deadline has passed): nothing to report.
                log.warning("leader-only work stopped: not the leader", error=str(error))
            finally:
                del self._scopes[id(runnable)]

    async def _lead(self) -> None:
        assert self.elector is not None

        async def lead() -> None:
            async with trio.open_nursery() as leading:
                for runnable in self._runnables:
                    if runnable.needs_leader_election and not _needs_shard_lease(runnable):
                        leading.start_soon(self._run_one, runnable)

        try:
            await self.elector.run(lead)
        except (LeadershipLost, LeaseRefused) as lost:
            self._leadership_lost = lost
            self._work.cancel()

    async def _hold_shard(self, shard: ShardMember) -> None:
        """Hold this replica's shard Lease and run the sharded controllers meanwhile; losing
        it ends the manager as losing the leader lease does."""

        async def work() -> None:
            async with trio.open_nursery() as sharded:
                for runnable in self._runnables:
                    if _needs_shard_lease(runnable):
                        sharded.start_soon(self._run_one, runnable)

        try:
            await shard.elector.run(work)
        except (LeadershipLost, LeaseRefused) as lost:
            self._leadership_lost = lost
            self._work.cancel()

    def _add_sharder(self) -> None:
        """The ring's sharder, a leader-only runnable, once controllers were built sharded."""
        shard = self.shard
        if shard is None or self.sharder is not None or not shard.kinds:
            return
        if not shard.options.run_sharder:
            return
        self.add_sharder(shard.options, shard.kinds)

    def add_sharder(self, options: ShardingOptions, kinds: Sequence[ShardedKind]) -> Sharder:
        """Run ring ``options.ring``'s sharder over ``kinds`` while leading (and its admission
        webhook on every replica with ``options.webhook``): a replica's own, or, in a manager
        without sharding of its own, a sharder process's (``kubetrio sharder``)."""
        self.sharder = Sharder(
            self.unfenced_client,
            self.client,
            options,
            kinds,
            registry=self.registry,
            leases=self.cache.informer(
                Lease, namespace=options.namespace, label_selector=f"{RING_LABEL}={options.ring}"
            ),
        )
        self.add(self.sharder)
        if options.webhook:
            if "webhook" not in self.http.readyz.names():
                self.http.add_readyz_check("webhook", self.webhooks.started_check)
            register_assigners(self.webhooks, self.sharder)
        return self.sharder

    async def _stop_when_asked(self) -> None:
        await self._stop_requested.wait()
        log.info("shutting down", grace_seconds=self.graceful_shutdown_timeout)
        for runnable in self._runnables:
            if isinstance(runnable, Stoppable):
                runnable.stop()
            elif (scope := self._scopes.get(id(runnable))) is not None:
                scope.cancel()
        if self.elector is not None and not self.elector.is_leader:
            self._work.cancel()  # still campaigning: nothing to finish
        await trio.sleep(self.graceful_shutdown_timeout)
        log.warning("grace period over, cancelling what still runs")
        self._work.cancel()
