"""The embedded demo's scenario: what it does to the cluster, in which order, what it waits
for, and what it shows and records along the way (see the package's docstring)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import trio
from rich.console import Group, RenderableType
from rich.text import Text

from kubetrio.api.machine import (
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
    NODE_PRESERVED,
    PHASE_FAILED,
    PHASE_RUNNING,
    PRESERVE_FALSE,
    PRESERVE_WHEN_FAILED,
    Machine,
)
from kubetrio.cmd.demo import DEFAULT_MACHINES, seed
from kubetrio.cmd.demo.clouds import DemoCloud, Ec2Cloud, SimCloud
from kubetrio.cmd.demo.cluster import ClusterView
from kubetrio.cmd.demo.output import Output
from kubetrio.cmd.demo.summary import (
    Timeline,
    phase_table,
    summary_lines,
    summary_rows,
    summary_table,
)
from kubetrio.cmd.demo.view import (
    MachineRow,
    StorageRow,
    event_line,
    gone_line,
    kubectl_hint,
    machine_node,
    machine_rows,
    machine_set_name,
    machine_table,
    natural_key,
    plain_line,
    pods_per_node,
    set_gone_line,
    set_line,
    set_rows,
    set_table,
    storage_line,
    storage_rows,
    storage_table,
)
from kubetrio.controllers.storage.client import HttpStorageBackend
from kubetrio.controllers.storage.errors import StorageError
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager

# Without --duration the demo still ends: a scenario stuck this long is a failure, not a demo.
HARD_CAP = 180.0
STORAGE_POLL = 1.0
# How long the demo watches a preserved failed machine stay (not replaced) before the user
# releases it.
PRESERVED_FOR = 2.0
UPDATE_LABELS = (
    LABEL_NODE_CANDIDATE_FOR_UPDATE,
    LABEL_NODE_SELECTED_FOR_UPDATE,
    LABEL_NODE_UPDATE_RESULT,
)


class DemoFailed(Exception):
    """The scenario ran but left the cluster wrong (an orphan node or VM)."""


@dataclass(frozen=True, slots=True)
class DemoOptions:
    machines: int = DEFAULT_MACHINES
    duration: float | None = None  # None: until the scenario finishes (at most HARD_CAP)
    keep_running: bool = False
    live: bool = False  # a rich table on a terminal; plain lines otherwise
    boot_seconds: float = seed.BOOT_SECONDS
    storage_url: str | None = None  # the simulated storage service, when the cluster has one
    cloud_url: str | None = None  # the simulated cloud the ``sim`` driver calls
    # After the scale-down, also wait until the storage service forgot the deleted machines'
    # nodes (what the nodedelete controller achieves once the service allows it).
    wait_for_storage: bool = False
    # The EC2 double the machines live in (the ``aws`` provider); None: the simulated cloud.
    ec2_url: str | None = None


class Demo:
    """The scenario, its display and its record. ``run`` is the manager's companion: it
    returns the exit code, and the manager stops when it does."""

    def __init__(
        self,
        client: Client,
        options: DemoOptions,
        *,
        kubeconfig: str,
        stream: TextIO | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.kubeconfig = kubeconfig
        self.view = ClusterView(client)
        self.cloud: DemoCloud = (
            Ec2Cloud(options.ec2_url)
            if options.ec2_url
            else SimCloud(options.cloud_url, options.boot_seconds)
        )
        self.timeline = Timeline()
        self.out = Output(options.live, stream if stream is not None else sys.stdout)
        self.storage: list[StorageRow] | None = None  # None: no storage service (yet)
        self._storage_changed = trio.Event()
        self.stage = "starting"
        self._start = 0.0
        self._summary_printed = False
        self._sets_shown: dict[str, tuple[object, ...]] = {}
        # Every machine's node as last seen: the nodes of machines that went must go too.
        self.machine_nodes: dict[str, str] = {}
        handler: EventHandler[Any] = EventHandler(
            on_add=lambda *_: self.observe(),
            on_update=lambda *_: self.observe(),
            on_delete=lambda *_: self.observe(),
        )
        self.view.machines.add_handler(handler)
        self.view.sets.add_handler(handler)

    # -- clock and display ----------------------------------------------------------------

    def elapsed(self) -> float:
        return trio.current_time() - self._start

    def event(self, message: str, **fields: object) -> None:
        self.stage = message
        self.out.line(event_line(self.elapsed(), message, **fields))

    def refresh(self) -> None:
        """Observe, then redraw the live table."""
        self.observe()
        self.out.refresh(self.renderable())

    def observe(self) -> None:
        """Read the caches, record milestones and print changes (plain mode).

        Also called straight from the Machine and MachineSet informers' handlers, so every step
        the controllers record is seen, even one they leave again before the display loop would
        have run.
        """
        now = trio.current_time()
        elapsed = now - self._start
        sets = set_rows(self.view.set_list())
        for set_row in sets:
            if self._sets_shown.get(set_row.name) != set_row.key():
                self._sets_shown[set_row.name] = set_row.key()
                self.out.line(set_line(elapsed, set_row), always=False)
        for name in sorted(self._sets_shown.keys() - {r.name for r in sets}, key=natural_key):
            del self._sets_shown[name]
            self.out.line(set_gone_line(elapsed, name), always=False)
        machines = self.view.machine_list()
        for machine in machines:
            if node := machine_node(machine):
                self.machine_nodes[machine.name] = node
        rows = self._rows(machines, now)
        for row in self.timeline.observe(now, rows):
            self.out.line(plain_line(elapsed, row), always=False)
        for name in self.timeline.gone(now, (m.name for m in machines)):
            self.out.line(gone_line(elapsed, name), always=False)

    def _rows(self, machines: list[Machine], now: float) -> list[MachineRow]:
        return machine_rows(
            machines,
            self.view.node_map(),
            pods_per_node(self.view.pods.lister.list()),
            self.timeline.first_seen(),
            now,
        )

    def renderable(self) -> RenderableType:
        now = trio.current_time()
        rows = self._rows(self.view.machine_list(), now)
        present = {row.name for row in rows}
        gone = [row for name, row in self.timeline.departed.items() if name not in present]
        rows = sorted([*rows, *gone], key=lambda row: natural_key(row.name))
        deployment = self.view.deployment()
        heading = f"machine deployment {seed.DEPLOYMENT} — {self.stage} ({now - self._start:.0f}s)"
        if deployment is not None:
            status = deployment.status
            heading += (
                f": {deployment.spec.replicas} wanted, {status.updated_replicas} updated, "
                f"{status.available_replicas} available"
            )
        width = self.out.console.width if self.out.console is not None else 160
        parts: list[RenderableType] = [
            Text(heading, style="bold"),
            set_table(set_rows(self.view.set_list())),
            machine_table(rows, title="machines", width=width),
        ]
        if self.storage:
            parts.append(storage_table(self.storage))
        return Group(*parts)

    async def _display_loop(self) -> None:
        while True:
            # Live: redraw at least every quarter second so ages tick; plain: on changes only.
            with trio.move_on_after(0.25 if self.options.live else math.inf):
                await self.view.changed()
            self.refresh()

    async def _storage_loop(self, url: str) -> None:
        """Poll the storage service's node list, through the storage controllers' own client.
        A failed poll is skipped: the storage table is a view, not part of the scenario."""
        backend = HttpStorageBackend(url, timeout=STORAGE_POLL * 5)
        previous: dict[str, str] = {}
        while True:
            try:
                nodes = await backend.list_nodes()
            except StorageError:
                nodes = None
            if nodes is not None:
                self.storage = storage_rows(nodes)
                current = {row.name: row.state for row in self.storage}
                for row in self.storage:
                    if previous.get(row.name) != row.state:
                        self.out.line(storage_line(self.elapsed(), row), always=False)
                for name in sorted(previous.keys() - current.keys(), key=natural_key):
                    self.out.line(
                        storage_line(self.elapsed(), StorageRow(name, "deleted")), always=False
                    )
                previous = current
                self._storage_changed.set()
                self._storage_changed = trio.Event()
            await trio.sleep(STORAGE_POLL)

    async def until(self, predicate: Callable[[], bool]) -> None:
        while True:
            self.refresh()
            if predicate():
                return
            await self.view.changed()

    # -- what the scenario waits for ------------------------------------------------------

    def _settled(self, replicas: int, class_name: str) -> bool:
        """The deployment has rolled out ``replicas`` machines of ``class_name``: its status
        says so, exactly that many Running machines exist, none is being deleted and each
        belongs to the set of that class (an in-place update moves machines to the new set
        without changing their spec), no other set still has machines, and no node outlived
        its machine."""
        deployment = self.view.deployment()
        if deployment is None or deployment.spec.replicas != replicas:
            return False
        status = deployment.status
        if status.observed_generation < deployment.metadata.generation:
            return False
        if not status.replicas == status.updated_replicas == status.available_replicas == replicas:
            return False
        sets = self.view.set_list()
        if any(s.status.replicas and s.spec.template.spec.class_.name != class_name for s in sets):
            return False
        current = {s.name for s in sets if s.spec.template.spec.class_.name == class_name}
        machines = self.view.machine_list()
        if len(machines) != replicas or any(
            m.deleting or m.phase != PHASE_RUNNING or machine_set_name(m) not in current
            for m in machines
        ):
            return False
        return not self.orphan_nodes()

    def _back_in_service(self) -> bool:
        """Every machine's node is free of the in-place update's labels and schedulable."""
        nodes = self.view.node_map()
        for machine in self.view.machine_list():
            node = nodes.get(machine_node(machine))
            if node is None or node.spec.unschedulable:
                return False
            if any(label in node.metadata.labels for label in UPDATE_LABELS):
                return False
        return True

    def _preserved(self, name: str) -> bool:
        """The machine is Failed and preserved, and its node says it was drained."""
        machine = next((m for m in self.view.machine_list() if m.name == name), None)
        if machine is None or machine.phase != PHASE_FAILED:
            return False
        if not machine.status.current_status.preserve_expiry_time:
            return False
        node = self.view.node_map().get(machine_node(machine))
        condition = node.condition(NODE_PRESERVED) if node is not None else None
        return condition is not None and condition.status == "True"

    def live_nodes(self) -> set[str]:
        return {node for m in self.view.machine_list() if (node := machine_node(m))}

    def orphan_nodes(self) -> list[str]:
        """Nodes of VMs (they have a provider ID) that belong to no machine of the demo."""
        live = self.live_nodes()
        return sorted(
            (
                name
                for name, node in self.view.node_map().items()
                if node.spec.provider_id and name not in live
            ),
            key=natural_key,
        )

    def gone_nodes(self) -> set[str]:
        """Nodes of the machines that went, except a name a machine that stays has now (a
        cloud may give a new instance the private address, and so the name, of a gone one)."""
        present = {m.name for m in self.view.machine_list()}
        gone = {node for name, node in self.machine_nodes.items() if name not in present}
        return gone - self.live_nodes()

    def _workloads_placed(self, machines: int) -> bool:
        """Every pod of the workload Running, on a node of a machine that stays."""
        nodes = self.live_nodes() & self.view.node_map().keys()
        for app, count in seed.workload_replicas(machines).items():
            pods = self.view.running_pods(app)
            if len(pods) != count or any(p.spec.node_name not in nodes for p in pods):
                return False
        return True

    async def _manager_ready(self, manager: Manager) -> None:
        """Caches synced and, with leader election, leading: the controllers are running, so
        the times measured are theirs, not the manager's start-up."""
        await manager.cache.wait_for_sync()
        # The elector has no event for winning; a short poll is cheap for a one-off wait.
        while manager.elector is not None and not manager.elector.is_leader:  # noqa: ASYNC110
            await trio.sleep(0.05)

    def _begin(self, phase: str, message: str, **fields: object) -> None:
        self.timeline.begin(phase, trio.current_time())
        self.event(message, **fields)

    def _end(self, message: str, **fields: object) -> None:
        self.timeline.end(trio.current_time())
        phase = self.timeline.phases[-1]
        self.event(message, took=f"{phase.seconds or 0.0:.1f}s", **fields)

    # -- the scenario ---------------------------------------------------------------------

    async def scenario(self, manager: Manager | None = None) -> None:
        await self.cloud.prepare()  # while the manager starts
        if manager is not None:
            await self._manager_ready(manager)
            self.event("manager ready")
        total = self.options.machines
        first = seed.initial_replicas(total)
        self._begin(
            "create",
            "creating the deployment",
            deployment=seed.DEPLOYMENT,
            machine_class=self.cloud.class_name,
            replicas=first,
            max_surge=seed.MAX_SURGE,
            max_unavailable=seed.MAX_UNAVAILABLE,
        )
        classes = await self.cloud.documents()
        await seed.seed_deployment(self.client, first, classes, self.cloud.class_name)
        await self.until(lambda: self._settled(first, self.cloud.class_name))
        self._end("deployment ready", replicas=first)

        if total > first:
            self._begin("scale-up", "scaling up", replicas=total)
            await seed.scale(self.client, total)
            await self.until(lambda: self._settled(total, self.cloud.class_name))
            self._end("scaled up", replicas=total)
        else:
            self.event("scale-up skipped", reason="one machine only")

        self._begin(
            "rolling-update",
            "rolling update",
            machine_class=f"{self.cloud.class_name}->{self.cloud.new_class_name}",
        )
        await seed.change_class(self.client, self.cloud.new_class_name)
        await self.until(lambda: self._settled(total, self.cloud.new_class_name))
        self._end("rolled out", machine_class=self.cloud.new_class_name)

        await self._in_place(total)
        await self._failure(total)

        replicas = seed.workload_replicas(total)
        self._begin(
            "workloads",
            "deploying workloads",
            statefulset=f"{seed.STATEFULSET}x{replicas[seed.STATEFULSET]}",
            deployment=f"{seed.WEB}x{replicas[seed.WEB]}",
            pdb=seed.PDB_NAME,
        )
        await seed.seed_workloads(self.client, total)
        await self.until(lambda: self._workloads_placed(total))
        self._end("workloads running")

        last = seed.final_replicas(total)
        if last < total:
            await self._scale_down(total, last)
        else:
            self.event("scale-down skipped", reason="one machine only")
        if self.options.wait_for_storage and self.options.storage_url:
            gone = self.gone_nodes()
            self._begin("storage", "waiting for the storage nodes to go", nodes=len(gone))
            while self.storage is None or gone & {row.name for row in self.storage}:
                await self._storage_changed.wait()
            self._end("storage nodes removed")
        await self._check_orphans()

    async def _in_place(self, total: int) -> None:
        """The deployment moves to a new class in place (MCM's ``InPlaceUpdate`` strategy):
        the same machines on the same VMs, drained, updated by the node's agent and moved to
        the new set, a bounded number at a time."""
        before = {m.name: m.spec.provider_id for m in self.view.machine_list()}
        target = self.cloud.in_place_class_name
        self._begin(
            "in-place-update",
            "in-place update",
            machine_class=f"{self.cloud.new_class_name}->{target}",
            max_unavailable=seed.IN_PLACE_MAX_UNAVAILABLE,
        )
        await seed.update_in_place(self.client, target)
        await self.until(lambda: self._settled(total, target) and self._back_in_service())
        after = {m.name: m.spec.provider_id for m in self.view.machine_list()}
        kept = sorted((name for name in after if before.get(name) == after[name]), key=natural_key)
        self._end(
            "updated in place",
            machine_class=target,
            same_vms=len(kept),
            new_machines=len(after.keys() - before.keys()),
        )

    async def _failure(self, total: int) -> None:
        """A user asks MCM to preserve a machine should it fail (the node's ``preserve``
        annotation), and its VM breaks: the machine controller marks it Failed after the health
        timeout and preserves it (its node tainted and drained, its MachineSet not replacing
        it); once the user releases it, the MachineSet replaces it."""
        running = sorted(
            (m for m in self.view.machine_list() if m.phase == PHASE_RUNNING),
            key=lambda m: natural_key(m.name),
        )
        if not running or not running[0].spec.provider_id or not machine_node(running[0]):
            self.event("failure skipped", reason="no running machine with a VM")
            return
        victim = running[0]
        node = machine_node(victim)
        target = self.cloud.in_place_class_name
        self._begin(
            "failure",
            "failing a VM",
            machine=victim.name,
            provider_id=victim.spec.provider_id,
            health_timeout=seed.HEALTH_TIMEOUT,
            preserve=PRESERVE_WHEN_FAILED,
        )
        await seed.preserve_node(self.client, node, PRESERVE_WHEN_FAILED)
        broke = trio.current_time()
        await self.cloud.break_vm(victim.spec.provider_id)
        times = self.timeline.machines[victim.name]
        await self.until(lambda: times.failed is not None or times.gone is not None)
        failed_after = (times.failed if times.failed is not None else trio.current_time()) - broke
        self.event("machine failed", machine=victim.name, after=f"{failed_after:.1f}s")
        await self.until(lambda: self._preserved(victim.name) or times.gone is not None)
        if times.gone is not None:
            raise DemoFailed(f"machine {victim.name} was replaced although preserved")
        preserved_at = trio.current_time()
        machine = next(m for m in self.view.machine_list() if m.name == victim.name)
        self.event(
            "machine preserved",
            machine=victim.name,
            node=node,
            until=machine.status.current_status.preserve_expiry_time,
        )
        with trio.move_on_after(PRESERVED_FOR):
            await self.until(lambda: times.gone is not None or self._replacements(broke) > 0)
        if times.gone is not None or self._replacements(broke):
            raise DemoFailed(f"machine {victim.name} was replaced although preserved")
        self.event(
            "releasing the preserved machine",
            machine=victim.name,
            kept_for=f"{trio.current_time() - preserved_at:.1f}s",
            preserve=PRESERVE_FALSE,
        )
        await seed.preserve_node(self.client, node, PRESERVE_FALSE)
        await self.until(lambda: times.gone is not None and self._settled(total, target))
        self.timeline.end(
            trio.current_time(),
            failed_after=failed_after,
            preserved_after=preserved_at - broke,
        )
        replacements = sorted(
            (name for name, t in self.timeline.machines.items() if t.created > broke),
            key=natural_key,
        )
        self.event(
            "machine replaced",
            failed=victim.name,
            by=",".join(replacements) or "-",
            took=f"{self.timeline.phases[-1].seconds or 0.0:.1f}s",
        )

    def _replacements(self, since: float) -> int:
        return sum(1 for t in self.timeline.machines.values() if t.created > since)

    async def _scale_down(self, total: int, last: int) -> None:
        placed_before = {
            pod.name: pod.spec.node_name
            for app in seed.workload_replicas(total)
            for pod in self.view.running_pods(app)
        }
        nodes_before = self.live_nodes()
        self._begin("scale-down", "scaling down", replicas=last)
        await seed.scale(self.client, last)
        await self.until(
            lambda: (
                self._settled(last, self.cloud.in_place_class_name)
                and self._workloads_placed(total)
            )
        )
        left = nodes_before - self.live_nodes()
        evicted = {pod: node for pod, node in placed_before.items() if node in left}
        # StatefulSet pods come back under their name, with their volume, on another machine.
        placed = {pod.name: pod.spec.node_name for pod in self.view.running_pods(seed.STATEFULSET)}
        moved = [
            f"{name}:{evicted[name]}->{placed[name]}"
            for name in sorted(evicted, key=natural_key)
            if name in placed
        ]
        self._end(
            "scale-down done",
            remaining=last,
            pods_moved=len(evicted),
            volumes_moved=",".join(moved) or "-",
        )

    async def _check_orphans(self) -> None:
        """Nothing outlived its owner: no node without a machine, no VM at the cloud without
        one. A leftover is a controller bug the demo must not hide."""
        live = {m.spec.provider_id for m in self.view.machine_list()}
        vms = await self.cloud.vms()
        nodes = self.orphan_nodes()
        orphan_vms = [vm for vm in vms if vm not in live]
        self.event("orphans", nodes=len(nodes), vms=len(orphan_vms))
        if nodes or orphan_vms:
            raise DemoFailed(f"left behind: nodes {nodes or '-'}, VMs {orphan_vms or '-'}")

    async def _bounded_scenario(self, manager: Manager | None) -> int:
        limit = self.options.duration if self.options.duration is not None else HARD_CAP
        with trio.move_on_after(limit) as scope:
            try:
                await self.scenario(manager)
            except DemoFailed as failure:
                self.event("failed", reason=str(failure))
                print(f"kubetrio: the demo failed: {failure}", file=sys.stderr, flush=True)
                return 1
            self.event("finished")
            return 0
        if scope.cancelled_caught and self.options.duration is not None:
            self.event("stopped", reason=f"--duration {limit:g}s reached")
            return 0
        stage = self.stage
        self.event("gave up", reason=f"not finished within {limit:g}s", stage=stage)
        print(
            f"kubetrio: the demo did not finish within {limit:g}s (stuck at: {stage}); "
            "the manager's log says why",
            file=sys.stderr,
            flush=True,
        )
        return 1

    def stopping(self) -> None:
        """A signal arrived: the manager lets in-flight reconciles (a drain, say) finish first,
        which can take a moment, so say so."""
        self.event("stopping", reason="signal: in-flight work finishes first; again to exit now")

    def print_summary(self) -> None:
        if self._summary_printed:
            return
        self._summary_printed = True
        rows = summary_rows(self.timeline)
        if self.out.live:
            self.out.print(phase_table(self.timeline))
            self.out.print(summary_table(rows, self.elapsed()))
        else:
            for text in summary_lines(self.timeline, rows, self.elapsed()):
                self.out.line(text)

    async def run(self, manager: Manager | None = None) -> int:
        """The whole demo; the exit code (0: finished or stopped by --duration). With the
        ``manager``, the scenario starts once it is ready."""
        self._start = trio.current_time()
        async with trio.open_nursery() as nursery:
            await nursery.start(self.view.run)
            if self.options.storage_url:
                nursery.start_soon(self._storage_loop, self.options.storage_url)
            nursery.start_soon(self._display_loop)
            try:
                with self.out.showing(self.renderable):
                    code = await self._bounded_scenario(manager)
                    self.refresh()
            finally:
                # Also on Ctrl-C: what happened so far is worth seeing.
                self.print_summary()
            if self.options.keep_running:
                self.out.line(f"kubeconfig: {self.kubeconfig}")
                self.out.line(f"  try: {kubectl_hint(self.kubeconfig)}")
                self.out.line("the embedded cluster stays up; Ctrl-C stops it")
                self.stage = "kept running"
                with self.out.showing(self.renderable):
                    await trio.sleep_forever()
            nursery.cancel_scope.cancel()
        return code
