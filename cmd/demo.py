"""The embedded demo (``kubetrio run --embedded``): a machine deployment's life in under a minute.

It seeds a sim MachineClass and N Machines, waits for them to join, puts a workload with volumes
and a disruption budget on them, then deletes half of the machines so the machine controller's
deletion flow — drain (pods and their volumes move to the other machines), VM deletion, node
deletion, finalizer removal — runs for real against the simulated cluster. Progress is shown
live (a table on a terminal, one line per change otherwise) and a summary of the measured times
ends it.

The demo is a companion of the manager, not part of it: it only reads the cluster through its
own informers and writes what a user would (creates, one delete per scaled-down machine). The
controllers do everything else.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import trio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from kubetrio.api.core import Node, Pod
from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.cmd import demo_seed as seed
from kubetrio.cmd.demo_summary import Timeline, summary_lines, summary_rows, summary_table
from kubetrio.cmd.demo_view import (
    MachineRow,
    StorageRow,
    event_line,
    gone_line,
    kubectl_hint,
    machine_rows,
    machine_table,
    natural_key,
    plain_line,
    pods_per_node,
    storage_line,
    storage_rows,
    storage_table,
)
from kubetrio.controllers.storage.client import HttpStorageBackend
from kubetrio.controllers.storage.errors import StorageError
from kubetrio.runtime.client import Client
from kubetrio.runtime.informer import EventHandler, Informer
from kubetrio.runtime.manager import Manager

# Without --duration the demo still ends: a scenario stuck this long is a failure, not a demo.
HARD_CAP = 180.0
DEFAULT_MACHINES = 4
STORAGE_POLL = 1.0


@dataclass(frozen=True, slots=True)
class DemoOptions:
    machines: int = DEFAULT_MACHINES
    duration: float | None = None  # None: until the scenario finishes (at most HARD_CAP)
    keep_running: bool = False
    live: bool = False  # a rich table on a terminal; plain lines otherwise
    boot_seconds: float = seed.BOOT_SECONDS
    storage_url: str | None = None  # the simulated storage service, when the cluster has one
    # After the scale-down, also wait until the storage service forgot the deleted machines'
    # nodes (what the nodedelete controller achieves once the service allows it).
    wait_for_storage: bool = False


class ClusterView:
    """The demo's own informers: the demo's Machines, all Nodes and Pods, and one event that
    fires on any change so waits and the display wake exactly when something happened."""

    def __init__(self, client: Client) -> None:
        self.machines = Informer(
            client, Machine, namespace=seed.NAMESPACE, label_selector=f"name={seed.DEPLOYMENT}"
        )
        self.nodes = Informer(client, Node)
        self.pods = Informer(client, Pod)
        self._changed = trio.Event()
        handler: EventHandler[Any] = EventHandler(
            on_add=lambda *_: self.notify(),
            on_update=lambda *_: self.notify(),
            on_delete=lambda *_: self.notify(),
        )
        for informer in (self.machines, self.nodes, self.pods):
            informer.add_handler(handler)

    def notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for informer in (self.machines, self.nodes, self.pods):
                nursery.start_soon(informer.run)
            for informer in (self.machines, self.nodes, self.pods):
                await informer.wait_for_sync()
            task_status.started()

    def machine_list(self) -> list[Machine]:
        return self.machines.lister.list(seed.NAMESPACE)

    def node_map(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes.lister.list()}

    def running_pods(self, app: str) -> list[Pod]:
        return [
            pod
            for pod in self.pods.lister.list(seed.NAMESPACE)
            if pod.metadata.labels.get("app") == app
            and pod.spec.node_name
            and not pod.deleting
            and pod.status.phase == "Running"
        ]


class Output:
    """Where the demo writes: a ``rich.Live`` table with milestone lines printed above it, or
    plain lines (machine changes included) for pipes and files."""

    def __init__(self, live: bool, stream: TextIO) -> None:
        self.live = live
        self.stream = stream
        self.console = Console(file=stream, highlight=False) if live else None
        self._live: Live | None = None
        self.gone = False

    @contextmanager
    def showing(self, renderable: Callable[[], RenderableType]) -> Iterator[None]:
        if self.console is None:
            yield
            return
        with Live(renderable(), console=self.console, auto_refresh=False, transient=False) as live:
            self._live = live
            try:
                yield
            finally:
                self.refresh(renderable())  # the final state stays on screen
                self._live = None

    def refresh(self, renderable: RenderableType) -> None:
        live = self._live
        if live is not None:
            self._write(lambda: live.update(renderable, refresh=True))

    def line(self, text: str, *, always: bool = True) -> None:
        """A line of text; ``always=False`` lines (machine changes) only in plain mode, where
        they stand in for the table."""
        console = self.console
        if console is None:
            self._write(lambda: print(text, file=self.stream, flush=True))
        elif always:
            self._write(lambda: console.print(Text(text)))

    def print(self, renderable: RenderableType) -> None:
        console = self.console
        if console is not None:
            self._write(lambda: console.print(renderable))

    def _write(self, write: Callable[[], None]) -> None:
        """A closed terminal or pipe (EIO, EPIPE) ends the output, not the demo: the cluster
        still has to be stopped cleanly."""
        if self.gone:
            return
        try:
            write()
        except OSError:
            self.gone = True


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
        self.timeline = Timeline()
        self.out = Output(options.live, stream if stream is not None else sys.stdout)
        self.names = seed.machine_names(options.machines)
        self.victims = seed.scale_down_names(self.names)
        self.storage: list[StorageRow] | None = None  # None: no storage service (yet)
        self._storage_changed = trio.Event()
        self.stage = "starting"
        self._start = 0.0
        self._summary_printed = False
        self.view.machines.add_handler(
            EventHandler(
                on_add=lambda *_: self.observe(),
                on_update=lambda *_: self.observe(),
                on_delete=lambda *_: self.observe(),
            )
        )

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

        Also called straight from the Machine informer's handler, so every step the controller
        records is seen, even one it leaves again before the display loop would have run.
        """
        now = trio.current_time()
        machines = self.view.machine_list()
        rows = self._rows(machines, now)
        for row in self.timeline.observe(now, rows):
            self.out.line(plain_line(now - self._start, row), always=False)
        for name in self.timeline.gone(now, (m.name for m in machines)):
            self.out.line(gone_line(now - self._start, name), always=False)

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
        title = f"machines — {self.stage} ({now - self._start:.0f}s)"
        width = self.out.console.width if self.out.console is not None else 160
        parts: list[RenderableType] = [machine_table(rows, title=title, width=width)]
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

    # -- the scenario ---------------------------------------------------------------------

    def _all_running(self, names: list[str]) -> bool:
        by_name = {m.name: m for m in self.view.machine_list()}
        return all(n in by_name and by_name[n].phase == PHASE_RUNNING for n in names)

    def _workloads_placed(self, avoid: frozenset[str] = frozenset()) -> bool:
        wanted = seed.workload_replicas(len(self.names))
        nodes = self.view.node_map()
        for app, count in wanted.items():
            pods = self.view.running_pods(app)
            if len(pods) != count:
                return False
            if any(p.spec.node_name in avoid or p.spec.node_name not in nodes for p in pods):
                return False
        return True

    def _victims_gone(self, victim_nodes: frozenset[str]) -> bool:
        present = {m.name for m in self.view.machine_list()}
        nodes = self.view.node_map()
        return not (present & set(self.victims)) and not (victim_nodes & nodes.keys())

    async def _manager_ready(self, manager: Manager) -> None:
        """Caches synced and, with leader election, leading: the controllers are running, so
        the times measured are theirs, not the manager's start-up."""
        await manager.cache.wait_for_sync()
        # The elector has no event for winning; a short poll is cheap for a one-off wait.
        while manager.elector is not None and not manager.elector.is_leader:  # noqa: ASYNC110
            await trio.sleep(0.05)

    async def scenario(self, manager: Manager | None = None) -> None:
        if manager is not None:
            await self._manager_ready(manager)
            self.event("manager ready")
        self.event("seeding", machine_class=seed.CLASS_NAME, machines=len(self.names))
        await seed.seed_machines(self.client, len(self.names), self.options.boot_seconds)
        for name in self.names:
            self.timeline.created(name, trio.current_time())
        self.event("waiting for machines to join")
        await self.until(lambda: self._all_running(self.names))
        self.event("machines running", count=len(self.names))

        replicas = seed.workload_replicas(len(self.names))
        self.event(
            "deploying workloads",
            statefulset=f"{seed.STATEFULSET}x{replicas[seed.STATEFULSET]}",
            deployment=f"{seed.WEB}x{replicas[seed.WEB]}",
            pdb=seed.PDB_NAME,
        )
        await seed.seed_workloads(self.client, len(self.names))
        await self.until(self._workloads_placed)
        self.event("workloads running")

        if not self.victims:
            self.event("scale-down skipped", reason="one machine only")
            return
        by_name = {m.name: m for m in self.view.machine_list()}
        victim_nodes = frozenset(
            by_name[n].metadata.labels.get("node") or n for n in self.victims if n in by_name
        )
        evicted = {
            pod.name: pod.spec.node_name
            for app in seed.workload_replicas(len(self.names))
            for pod in self.view.running_pods(app)
            if pod.spec.node_name in victim_nodes
        }
        self.event("scaling down", deleting=",".join(self.victims))
        now = trio.current_time()
        for name in self.victims:
            self.timeline.delete_requested(name, now)
        await seed.delete_machines(self.client, self.victims)
        await self.until(
            lambda: self._victims_gone(victim_nodes) and self._workloads_placed(victim_nodes)
        )
        # StatefulSet pods come back under their name, with their volume, on another machine.
        placed = {pod.name: pod.spec.node_name for pod in self.view.running_pods(seed.STATEFULSET)}
        moved = [
            f"{name}:{evicted[name]}->{placed[name]}"
            for name in sorted(evicted, key=natural_key)
            if name in placed
        ]
        self.event(
            "scale-down done",
            remaining=len(self.names) - len(self.victims),
            pods_moved=len(evicted),
            volumes_moved=",".join(moved) or "-",
        )
        if self.options.wait_for_storage and self.options.storage_url:
            self.event("waiting for the storage nodes to go", nodes=",".join(sorted(victim_nodes)))
            while self.storage is None or victim_nodes & {row.name for row in self.storage}:
                await self._storage_changed.wait()
            self.event("storage nodes removed")

    async def _bounded_scenario(self, manager: Manager | None) -> int:
        limit = self.options.duration if self.options.duration is not None else HARD_CAP
        with trio.move_on_after(limit) as scope:
            await self.scenario(manager)
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
        rows = summary_rows(self.timeline, self.victims)
        if self.out.live:
            self.out.print(summary_table(rows, self.elapsed()))
        else:
            for text in summary_lines(rows, self.elapsed()):
                self.out.line(text)

    async def run(self, manager: Manager | None = None) -> int:
        """The whole demo; the exit code (0: finished or stopped by --duration). With the
        ``manager``, seeding waits until it is ready."""
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
