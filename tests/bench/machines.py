"""Machine lifecycles: N machines (default 500) created, Running, deleted and gone, in waves.

Three processes on the real clock (the machine this was written for has 2 cores):

* the **emulator** (``--emulator-child``): ``serve_world()`` without the simulated cluster
  (nodes stay empty: no pods, nothing to evict), the machine CRDs from ``config/crd/``, one
  MachineClass ``provider: sim`` with ``bootSeconds: 0`` and its Secret holding ``userData``.
  Its simulated cloud (on its own port, announced ``cloud=``) registers each VM's Node, Ready,
  as soon as the VM is created. A store hook timestamps every machine's creation, phase
  changes, deletion request and disappearance (``time.monotonic()``: CLOCK_MONOTONIC is one
  system-wide clock on Linux, so the parent can compare it with its own). A wrapper around the
  router counts the HTTP requests ``emu.counters`` does not see (discovery) and every answer by
  status, so conflicts and other errors show up; wrappers around the cloud's operations count
  its calls the same way.
* the **manager** (``--manager-child``): ``Manager`` + ``controllers.machine.setup`` as
  ``kubetrio run`` wires them (``ManagerConfig`` defaults: 5 workers, MCM's timeouts), against
  the emulator's URL, its ``sim`` driver against the cloud's. Its peak RSS is its own
  ``ru_maxrss``, reported when it stops; its RSS once the caches synced is reported too, so the
  growth over the run shows.
* this process, the **driver**: a kubetrio ``Client`` (16 requests in flight, no client-side
  rate limit) that POSTs the N Machines (``spec.class`` naming the class, label
  ``name=pool-bench``), waits until the emulator has seen every one Running, DELETEs them all
  and waits until every Machine and every Node is gone. That is one **wave**; it runs
  ``--waves`` times (default 3) on the same manager, N new machines each time.

Every figure below but the two slopes is wave 1's alone, so it means what it meant when the
benchmark ran one wave: the later waves exist only for the slopes (``peak_rss_mb`` is the
manager's peak until the end of wave 1; ``peak_rss_mb_all_waves`` the peak over all of them).

**Manager CPU per machine lifecycle: the slope.** The manager's CPU time (its own ``getrusage``:
every thread) is read once its caches synced and again at the end of every wave (after ``SETTLE``,
so a wave's trailing requests are in it). A least-squares line through the end-of-wave points, CPU
against machines done, gives ``manager_cpu_ms_per_machine_slope``: what one more lifecycle costs a
warm manager — the target (``TARGET_CPU_MS``) applies to it — and, where the line meets zero
machines, ``manager_fixed_cpu_s``: interpreter start, imports, the informers' sync and wave 1's
one-offs. ``manager_cpu_ms_per_machine`` is the figure the benchmark printed before the slope: all
the CPU up to the end of wave 1, start-up included, over N, so the start-up's share of it shrinks as
N grows: only the slope compares across sizes. Each wave's own CPU per machine is printed too, so a
wave that disagrees with the line shows. ``requests_per_machine_slope`` fits the manager's API
requests (counted as below, all waves) the same way.

``wall_s`` runs from the first POST until the last Machine is gone (``create_s``: until the
last is Running; ``delete_s``: from the first DELETE until the last is gone). By default the
manager's client has no client-side rate limit (``--qps 0``), so the figure is what the
controller, the emulator and two shared cores can do. ``kubetrio run``'s default limit (20 qps,
burst 30: client-go's and MCM's defaults; ``--qps 20``) makes the wall time simply requests / 20
s: that bound is printed (``bucket_s_at_default_qps``) from the API requests and the cloud calls
counted (the sim driver's calls have their own connections and no client-side limit, so the
bound is an upper one).

**Requests.** ``emu.counters`` is reset once the manager's informers have listed and the
controller runs; afterwards every resource request counts except ``watch`` (long-lived, not per
machine) and the driver's own N creates and N deletes of Machines (the controller never
creates or deletes a Machine, so those counters are the driver's alone). ``requests_per_machine``
is that total over N: the Kubernetes API requests the controller made per machine lifecycle.
Cloud calls (``<cloud>/v1/<op>``) are reported separately, per operation, and are not in it.
Reads served by the informer cache cost no request, so any ``get``/``list`` in the counters is
a read that missed the cache (or a relist).

**The floor** (``floor_requests_per_machine``): the Kubernetes API writes one lifecycle cannot do
without under the machine controller's contract (MCM's lifecycle, an Event on each phase
transition), derived from what must change in the API (no reads: the cache serves them; no
watches; nothing that could be folded into another write):

=====  ===========================================  ============================================
 n     write                                        why it cannot be merged or skipped
=====  ===========================================  ============================================
 1     PATCH machine: add the finalizer             must be on the Machine before the VM exists
                                                    (a deletion must wait for the VM to go)
 2     POST the bootstrap-token Secret              the VM's user data carries it, so it must
                                                    exist before the VM is created
 3     PATCH machine: ``node`` label, priority      only known once the VM exists (after 1);
       annotation, ``spec.providerID``              metadata+spec, so not the /status write
 4     PATCH machine/status: Pending (Creating)     /status is a separate subresource: a main
                                                    resource write cannot carry status
 5     DELETE the bootstrap-token Secret            once joined (MCM deletes it on join)
 6     PATCH machine/status: Running (+ the node's  a later fact (the node turned Ready)
       conditions copied)
 7     PATCH machine/status: Terminating            the deletion flow's first recorded state
 8     PATCH node/status: ``Terminating`` condition  MCM marks the node (ScaleDown/Unhealthy)
 9     PATCH node: cordon (``unschedulable``)       the drain; an empty node still needs it so
                                                    nothing lands there meanwhile
 10    DELETE node                                  InitiateNodeDeletion
 11    PATCH machine: remove the finalizer          the Machine goes
=====  ===========================================  ============================================

plus the Events the controller records on each transition — at least one per phase change:
Pending, Running, Terminating (3 POSTs; a fourth for "gone" would be on a Machine that no
longer exists). **Floor: 11 + 3 = 14 requests per machine** (and 2 cloud calls: create and
delete; MCM's flow adds a status call before create, so a crash cannot make a second VM, and
one at the start of deletion, so 4).

Not in the floor but part of the design as written (deletion.py keeps MCM's step markers as
its only state): the four ``lastOperation`` step writes between Terminating and the finalizer
removal (after GetVMStatus, drain, VM deletion and node deletion: each step is idempotent and
checkable against the world, so a restarted manager could redo them instead), the Machine
Events on three of those steps (Drained, VMDeleted, NodeDeleted) and the drainer's two Node
Events (DrainStarted, DrainSucceeded), written even when the node had nothing to evict. With
them, 14 + 4 + 3 + 2 = **23** (``design_requests_per_machine``); anything above that is a
redundant request (a retry after a conflict, a write made from a stale cache).

**Baseline** (same run): the driver's bare loop with no manager running — the same N POSTs and
N DELETEs of Machines (no finalizer, so each DELETE removes it at once), timed from the first
POST until the last DELETE answered; measured before the manager starts and again after it
stopped, averaged. ``wall_over_baseline`` = ``wall_s`` / that (wave 1's: N machines each).

What it measured, when and on what machine (and the manager's CPU and memory per lifecycle
over the waves): ``docs/performance.md``.

Example::

    python tests/bench/machines.py                   # 3 waves of 500
    python tests/bench/machines.py --machines 100 --waves 5 --demo  # CI's (all.py --quick)
    python tests/bench/machines.py --waves 5 --workers 20 --qps 20 --burst 30

The last line is ``RESULT {json}``, with a ratio line before it. ``--gc tuned|default`` sets
the manager's collector policy as ``kubetrio run --gc`` does (default: ``kubetrio run``'s), for
an A/B of ``kubetrio.runtime.manager.gctuning``.

``--demo``: also time the embedded demo as the README runs it (``kubetrio run --embedded``:
its own emulator, simulated cluster and cloud as a child process, the real clock), from spawn
to exit after its summary: ``demo_s``, and ``demo_over_promise`` against the README's minute.
The demo's tests check what it does; how long it takes is measured here, where a loaded machine
makes a figure, not a failure.

``--simulate``: the emulator also runs the simulated cluster as ``kubetrio emulator
--simulate`` does (``ClusterSimulation.realistic()``: kubelet, scheduler, node lifecycle, ...);
the nodes still hold no pods, so the only difference is the simulated controllers' passes on
every Node and Machine-driven change, in ``emulator_cpu_s``.

**The rolling-update case** (``--rolling``): the manager runs the machine, MachineSet
and MachineDeployment controllers; the driver creates an N-machine MachineDeployment (maxSurge
``--surge``, default 10 %, maxUnavailable 0; VMs boot in ``--boot`` seconds, default 2), waits
until all N run, resets the counters and moves the template to another class. ``wall_s`` runs
from that PATCH until N machines of the new class run and every old one is gone; the ideal is
``ceil(N / surge)`` waves of one boot each (``wall_over_ideal``). ``requests_per_replaced_machine``
counts every API request but watches and that one PATCH over N: one machine's creation, join,
drain and deletion, and the sets' and the deployment's writes around it.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/machines.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import base64
import itertools
import json
import os
import resource
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from typing import Any

NS = "default"
CLASS = "bench"
LARGE = "bench-large"
DEPLOYMENT = "pool-bench"
PREFIX = "m-"
MACHINE_API = "machine.sapcloud.io/v1alpha1"
MACHINES_PATH = f"/apis/{MACHINE_API}/namespaces/{NS}/machines"
USER_DATA = "#!/bin/sh\nkubeadm join --token <<BOOTSTRAP_TOKEN>>\n"
IN_FLIGHT = 16  # the driver's concurrent requests
TOKEN = "kubetrio-bench"  # the admin's bearer token the emulator child is started with
POLL = 0.05
TIMEOUT = 1800.0
SETTLE = 1.0  # after the last machine is gone: trailing requests still count
FLOOR = 14
DESIGN = 23
FLOOR_CLOUD = 2
TARGET_CPU_MS = 15.0  # the goal for the manager's CPU per machine lifecycle (the slope)
DEFAULT_QPS = 20.0  # kubetrio run's --kube-api-qps default (client-go's, MCM's)
DRIVER_VERBS = ("create machines", "delete machines")
DEMO_PROMISE = 60.0  # the README: the embedded demo (default four machines) is over in a minute

# --------------------------------------------------------------------------- emulator child


def class_docs(boot: float = 0.0) -> list[dict[str, Any]]:
    """The Secret and the bench's classes: ``bench`` and ``bench-large`` (the rolling update's
    target), both booting in ``boot`` seconds."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{CLASS}-secret", "namespace": NS},
        "data": {"userData": base64.b64encode(USER_DATA.encode()).decode()},
    }
    classes = [
        {
            "apiVersion": MACHINE_API,
            "kind": "MachineClass",
            "metadata": {"name": name, "namespace": NS},
            "provider": "sim",
            "providerSpec": {"region": "eu-1", "bootSeconds": boot},
            "secretRef": {"name": f"{CLASS}-secret", "namespace": NS},
        }
        for name in (CLASS, LARGE)
    ]
    return [secret, *classes]


def machine_doc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": NS, "labels": {"name": DEPLOYMENT}},
        "spec": {"class": {"kind": "MachineClass", "name": CLASS}},
    }


class Tracker:
    """Machine and Node events as the store commits them, timestamped."""

    def __init__(self) -> None:
        self.nodes = 0
        self.reset()

    def reset(self) -> None:
        """Forget the machines seen so far (the node count stays: it is the store's)."""
        self.phase: dict[str, str] = {}
        self.klass: dict[str, str] = {}
        self.created: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.deleting: dict[str, float] = {}
        self.gone: dict[str, float] = {}
        self.machine_versions = 0
        self.node_versions = 0
        self.events: Counter[str] = Counter()
        self.cpu_at_reset = _cpu()
        self.peak = 0

    def hook(self, rt: Any, ev: Any) -> None:
        now = time.monotonic()
        if rt.kind == "Event":
            if ev.type == "ADDED":
                obj = ev.entry.obj
                regarding = (obj.get("involvedObject") or {}).get("kind", "?")
                self.events[f"{regarding} {obj.get('reason', '?')}"] += 1
            return
        if rt.kind == "Node":
            self.node_versions += 1
            if ev.type == "ADDED":
                self.nodes += 1
            elif ev.type == "DELETED":
                self.nodes -= 1
            return
        if rt.kind != "Machine":
            return
        self.machine_versions += 1
        obj = ev.entry.obj
        name = obj["metadata"]["name"]
        if ev.type == "ADDED":
            self.created[name] = now
        if ev.type == "DELETED":
            self.gone[name] = now
            self.phase.pop(name, None)
            self.klass.pop(name, None)
            return
        phase = ((obj.get("status") or {}).get("currentStatus") or {}).get("phase", "")
        self.phase[name] = phase
        self.klass[name] = ((obj.get("spec") or {}).get("class") or {}).get("name", "")
        if phase == "Running" and name not in self.running:
            self.running[name] = now
        if obj["metadata"].get("deletionTimestamp") and name not in self.deleting:
            self.deleting[name] = now
        self.peak = max(self.peak, sum(1 for n in self.phase if n not in self.deleting))

    def state(self) -> dict[str, Any]:
        """What the driver polls for: kept small, it is asked 20 times a second."""
        return {
            "machines": len(self.phase),
            "running": sum(1 for phase in self.phase.values() if phase == "Running"),
            "nodes": self.nodes,
            "running_large": sum(
                1
                for name, phase in self.phase.items()
                if phase == "Running" and self.klass.get(name) == LARGE
            ),
            "peak": self.peak,
        }

    def final(self) -> dict[str, Any]:
        return {
            "last_running": max(self.running.values(), default=0.0),
            "last_gone": max(self.gone.values(), default=0.0),
            "to_running": [self.running[n] - self.created[n] for n in self.running],
            "to_gone": [self.gone[n] - self.deleting[n] for n in self.gone if n in self.deleting],
            "machine_versions": self.machine_versions,
            "node_versions": self.node_versions,
            "events": dict(self.events),
            "cpu_s": _cpu() - self.cpu_at_reset,
        }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class HttpTally:
    """HTTP requests by kind (``cloud <op>``, ``discovery``, ``api``) and answers by status."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()

    def install_cloud(self, cloud: Any) -> None:
        """Counts the driver's calls of the cloud (its own server, not the emulator's)."""
        from kubetrio.sim.cloud import CloudError

        def counted(op: str, call: Any) -> Any:
            def tallied(*args: Any, **kwargs: Any) -> Any:
                status = 200
                try:
                    return call(*args, **kwargs)
                except CloudError as error:
                    status = error.http_status
                    raise
                finally:
                    self.kinds[f"cloud {op}"] += 1
                    self.statuses[f"POST cloud {op} {status}"] += 1

            return tallied

        for op in ("create", "status", "initialize", "delete", "list"):
            setattr(cloud, op, counted(op, getattr(cloud, op)))

    def install(self, emu: Any) -> None:
        resolve = emu.router.resolve

        def tallying_resolve(path: str) -> Any:
            handler = resolve(path)
            kind = _kind_of(path)
            if kind is None:
                return handler

            async def tallied(req: Any) -> Any:
                response = await handler(req)
                self.kinds[kind] += 1
                if not ("/watch/" in req.path or req.query.get("watch") in ("true", "1")):
                    self.statuses[f"{req.method} {_target(path)} {response.status}"] += 1
                return response

            return tallied

        emu.router.resolve = tallying_resolve

    def snapshot(self) -> dict[str, Any]:
        return {"kinds": dict(self.kinds), "statuses": dict(self.statuses)}

    def reset(self) -> None:
        self.kinds.clear()
        self.statuses.clear()


def _kind_of(path: str) -> str | None:
    parts = [p for p in path.split("/") if p]
    if parts[:1] not in (["api"], ["apis"]):
        return None  # admin and bench routes
    if (parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3):
        return "discovery"
    return "api"


def _target(path: str) -> str:
    """``<plural>[/<subresource>]`` of a request path."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    return "/".join(rest[:1] + rest[2:3]) or "discovery"


def emulator_child(window: int, boot: float = 0.0, simulate: bool = False) -> None:
    import trio

    from kubetrio.cmd.assets import crd_documents
    from kubetrio.emulator import EmulatorOptions
    from kubetrio.emulator.http import Request, Response, json_response
    from kubetrio.sim import serve_world
    from kubetrio.sim.cloud import SimulatedCloud
    from kubetrio.sim.cluster import ClusterSimulation

    async def main() -> None:
        cluster = ClusterSimulation.realistic() if simulate else None  # as ``--simulate``
        options = EmulatorOptions(window=window, token=TOKEN)
        async with serve_world(options=options, simulate=cluster) as emu:
            for crd in crd_documents():
                emu.create(crd)
            for doc in class_docs(boot):
                emu.create(doc)
            tracker = Tracker()
            emu.store.subscribe(tracker.hook)
            tally = HttpTally()
            tally.install(emu)
            tally.install_cloud(emu.extension(SimulatedCloud))

            async def bench(req: Request) -> Response:
                what = req.path.rsplit("/", 1)[-1]
                if what == "state":
                    return json_response(tracker.state())
                if what == "final":
                    return json_response(tracker.final())
                if what == "tally" and req.method == "GET":
                    return json_response(tally.snapshot())
                if what in ("reset", "reset-counters") and req.method == "POST":
                    tally.reset()
                    if what == "reset":
                        tracker.reset()
                    else:  # the rolling update's: the machines seen so far stay known
                        tracker.peak = 0
                    emu.counters.reset()
                    return json_response({})
                return json_response({"error": f"no bench route {req.method} {req.path}"}, 404)

            emu.mount("/_bench", bench)
            print(f"cloud={emu.extension(SimulatedCloud).url}", flush=True)
            print(f"url={emu.url}", flush=True)
            await trio.sleep_forever()

    trio.run(main)


# --------------------------------------------------------------------------- manager child


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def manager_child(
    url: str,
    cloud: str,
    workers: int,
    qps: float,
    burst: int,
    rolling: bool = False,
    gc: str | None = None,
) -> None:
    """Runs until its stdin closes; prints ``READY {json}`` once synced, ``STATS {json}`` at
    the end."""
    import msgspec
    import trio

    from kubetrio.cmd.config import ManagerConfig
    from kubetrio.controllers.machine.options import MachineOptions
    from kubetrio.controllers.machine.setup import setup
    from kubetrio.runtime.client.typed import Client
    from kubetrio.runtime.manager.manager import Manager
    from kubetrio.runtime.util.log import configure_logging

    configure_logging(level="warning", stream=sys.stderr)

    async def main() -> None:
        config = ManagerConfig(
            machine=MachineOptions(sim_cloud_url=cloud), workers={"machine": workers}
        )
        if gc is not None:
            config = msgspec.structs.replace(config, gc=gc)
        client = Client.from_url(url, token=TOKEN, qps=qps, burst=burst)
        manager = Manager(
            client,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            workers=config.workers,
            gc=config.gc,
        )
        setup(manager, config)
        if rolling:
            from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
            from kubetrio.controllers.machineset.setup import setup as set_setup

            set_setup(manager, config)
            deployment_setup(manager, config)
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            print("READY " + json.dumps({"rss_kb": rss_kb()}), flush=True)
            # Each stdin line is a tag the driver wants this process's CPU time for, now (its
            # own getrusage: every thread, microsecond resolution); EOF stops the manager.
            while tag := (await trio.to_thread.run_sync(sys.stdin.readline)).strip():
                peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                print(f"CPU {tag} " + json.dumps({"cpu_s": _cpu(), "peak_kb": peak_kb}), flush=True)
            manager.stop()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        reconciles = {
            sample.labels["result"]: sample.value
            for metric in manager.registry.collect()
            if metric.name == "controller_runtime_reconcile"
            for sample in metric.samples
            if sample.name == "controller_runtime_reconcile_total"
            and sample.labels.get("controller") == "machine"
        }
        by_controller: Counter[str] = Counter()
        for metric in manager.registry.collect():
            for sample in metric.samples:
                if sample.name == "controller_runtime_reconcile_total":
                    by_controller[sample.labels["controller"]] += int(sample.value)
        stats = {
            "peak_rss_kb": usage.ru_maxrss,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "reconciles": reconciles,
            "reconciles_by_controller": dict(by_controller),
        }
        print("STATS " + json.dumps(stats), flush=True)

    trio.run(main)


# --------------------------------------------------------------------------- driver


class Child:
    """A child process of this script; its stdout lines read in a thread."""

    def __init__(self, *args: str, stdin: bool = False) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._cv = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append(line.strip())
                self._cv.notify_all()
        with self._cv:
            self.lines.append("EOF")
            self._cv.notify_all()

    def wait_for(self, prefix: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line[len(prefix) :]
                if "EOF" in self.lines:
                    raise SystemExit(f"child {self.proc.args[2:]} exited before {prefix!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"child {self.proc.args[2:]}: no {prefix!r} in {timeout}s")
                self._cv.wait(left)

    def usage(self, tag: str) -> dict[str, float]:
        """The manager child's ``cpu_s`` so far and ``peak_kb`` (RSS); ``tag``: unique per
        call."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(tag + "\n")
        self.proc.stdin.flush()
        usage: dict[str, float] = json.loads(self.wait_for(f"CPU {tag} "))
        return usage

    def cpu(self, tag: str) -> float:
        """The manager child's CPU seconds so far."""
        return self.usage(tag)["cpu_s"]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def each(names: list[str], call: Any) -> None:
    """``call(name)`` for every name, IN_FLIGHT at a time."""
    import trio

    limiter = trio.CapacityLimiter(IN_FLIGHT)

    async def one(name: str) -> None:
        async with limiter:
            await call(name)

    async with trio.open_nursery() as nursery:
        for name in names:
            nursery.start_soon(one, name)


class Driver:
    def __init__(self, url: str) -> None:
        from kubetrio.runtime.client.typed import Client

        self.client = Client.from_url(url, token=TOKEN, qps=0, max_concurrency=IN_FLIGHT)

    async def create(self, names: list[str]) -> None:
        async def post(name: str) -> None:
            body = json.dumps(machine_doc(name)).encode()
            await self.client.request("POST", MACHINES_PATH, body=body)

        await each(names, post)

    async def delete(self, names: list[str]) -> None:
        async def delete(name: str) -> None:
            await self.client.request("DELETE", f"{MACHINES_PATH}/{name}")

        await each(names, delete)

    async def bench(self, what: str, method: str = "GET") -> Any:
        return json.loads(await self.client.request(method, f"/_bench/{what}"))

    async def counters(self) -> dict[str, int]:
        snapshot: dict[str, int] = json.loads(
            await self.client.request("GET", "/_emulator/counters")
        )
        return snapshot

    async def wait(self, what: str, done: Any) -> dict[str, Any]:
        import trio

        deadline = time.monotonic() + TIMEOUT
        while True:
            state = await self.bench("state")
            if done(state):
                return state
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}; last state: {state}")
            await trio.sleep(POLL)


async def baseline(driver: Driver, n: int, tag: str) -> float:
    names = [f"base-{tag}-{i:05d}" for i in range(n)]
    started = time.monotonic()
    await driver.create(names)
    await driver.delete(names)
    return time.monotonic() - started


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares line through ``(machines done, cumulative cost)`` points: ``(cost per
    machine, fixed cost)``, the fixed cost being the line's value at zero machines."""
    if len(points) < 2:
        raise ValueError(f"a slope needs at least 2 points, got {len(points)}")
    fit = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return fit.slope, fit.intercept


def controller_requests(counters: dict[str, int]) -> int:
    """The manager's API requests in ``emu.counters``: all but watches and the driver's."""
    return sum(
        v for k, v in counters.items() if not k.startswith("watch ") and k not in DRIVER_VERBS
    )


async def lifecycles(driver: Driver, names: list[str]) -> dict[str, float]:
    """One wave: POST the machines, wait until all run, DELETE them, wait until all are gone
    (their Nodes too) and SETTLE; the wave's driver-side times."""
    import trio

    started = time.monotonic()
    await driver.create(names)
    created = time.monotonic()
    await driver.wait(f"{len(names)} machines Running", lambda s: s["running"] == len(names))
    delete_started = time.monotonic()
    await driver.delete(names)
    await driver.wait(
        "every machine and node gone", lambda s: s["machines"] == 0 and s["nodes"] == 0
    )
    await trio.sleep(SETTLE)  # the wave's trailing requests count in it
    return {"started": started, "post_s": created - started, "delete_started": delete_started}


async def run(args: argparse.Namespace, url: str, cloud: str) -> dict[str, Any]:
    import trio

    n, waves = args.machines, args.waves
    driver = Driver(url)
    base = [await baseline(driver, n, "a")]
    manager = Child(
        "--manager-child",
        url,
        cloud,
        str(args.workers),
        str(args.qps),
        str(args.burst),
        *gc_args(args),
        stdin=True,
    )
    try:
        ready = json.loads(await trio.to_thread.run_sync(manager.wait_for, "READY "))
        await trio.sleep(0.5)  # the controller's workers and the watches are up
        await driver.bench("reset", "POST")
        startup_cpu = await trio.to_thread.run_sync(manager.cpu, "start")
        # wave 1: the benchmark as it always was; every figure but the slopes is its own
        wave1 = await lifecycles(driver, [f"{PREFIX}{i:05d}" for i in range(n)])
        counters = await driver.counters()
        tally = await driver.bench("tally")
        state = await driver.bench("final")
        # (machines done, manager CPU s / its API requests so far) at the end of every wave
        wave1_usage = await trio.to_thread.run_sync(manager.usage, "wave-1")
        cpu = [(n, wave1_usage["cpu_s"])]
        requests = [(n, controller_requests(counters))]
        for wave in range(1, waves):
            await lifecycles(driver, [f"{PREFIX}{wave * n + i:05d}" for i in range(n)])
            done = (wave + 1) * n
            cpu.append((done, await trio.to_thread.run_sync(manager.cpu, f"wave-{wave + 1}")))
            requests.append((done, controller_requests(await driver.counters())))
        manager.close_stdin()
        stats = json.loads(await trio.to_thread.run_sync(manager.wait_for, "STATS ", 60.0))
    finally:
        manager.stop()
    base.append(await baseline(driver, n, "b"))
    started = wave1["started"]
    return {
        "n": n,
        "waves": waves,
        "wall_s": state["last_gone"] - started,
        "create_s": state["last_running"] - started,
        "post_s": wave1["post_s"],
        "delete_s": state["last_gone"] - wave1["delete_started"],
        "startup_cpu_s": startup_cpu,
        "wave1_peak_rss_kb": wave1_usage["peak_kb"],
        "cpu_points": cpu,
        "request_points": requests,
        "to_running": state["to_running"],
        "to_gone": state["to_gone"],
        "machine_versions": state["machine_versions"],
        "node_versions": state["node_versions"],
        "events": state["events"],
        "counters": counters,
        "tally": tally,
        "manager": stats,
        "ready_rss_kb": ready["rss_kb"],
        "emulator_cpu_s": state["cpu_s"],
        "baseline_s": base,
    }


def gc_args(args: argparse.Namespace) -> list[str]:
    """The manager child's ``--gc``, when one was given (else ``kubetrio run``'s default)."""
    return ["--gc", args.gc] if args.gc else []


def report(args: argparse.Namespace, r: dict[str, Any]) -> dict[str, Any]:
    n = r["n"]
    counters: dict[str, int] = r["counters"]
    watches = sum(v for k, v in counters.items() if k.startswith("watch "))
    driver_requests = sum(counters.get(k, 0) for k in DRIVER_VERBS)
    controller = {
        k: v for k, v in counters.items() if not k.startswith("watch ") and k not in DRIVER_VERBS
    }
    requests = sum(controller.values())
    # the lines run through the ends of the waves: their slopes are what one more machine
    # costs a warm manager, their values at zero machines the fixed costs
    cpu_slope, cpu_fixed = slope(r["cpu_points"])
    request_slope, request_fixed = slope(r["request_points"])
    startup_cpu = r["startup_cpu_s"]
    wave1_cpu = r["cpu_points"][0][1]
    cpu_marks = [(0, startup_cpu), *r["cpu_points"]]
    per_wave_ms = [
        round((b[1] - a[1]) / (b[0] - a[0]) * 1000, 2) for a, b in itertools.pairwise(cpu_marks)
    ]
    reads = sum(v for k, v in controller.items() if k.split()[0] in ("get", "list"))
    writes = requests - reads
    kinds: dict[str, int] = r["tally"]["kinds"]
    cloud = {k.split()[1]: v for k, v in kinds.items() if k.startswith("cloud ")}
    errors = {k: v for k, v in r["tally"]["statuses"].items() if int(k.split()[-1]) >= 300}
    per = {k: round(v / n, 3) for k, v in sorted(controller.items())}
    baseline = statistics.mean(r["baseline_s"])
    wall = r["wall_s"]
    rate = f"{args.qps:g} qps / burst {args.burst}" if args.qps > 0 else "no client rate limit"
    manager_requests = requests + sum(cloud.values())
    at_default = manager_requests / DEFAULT_QPS
    failed = sum(
        v for k, v in errors.items() if k.split()[1] != "cloud" and int(k.split()[-1]) >= 400
    )
    stats = r["manager"]

    waves = r["waves"]
    print(
        f"machines={n} workers={args.workers} manager client: {rate}; cores={os.cpu_count()} "
        f"gc={args.gc or 'as kubetrio run'}"
    )
    print(
        f"  manager CPU per machine lifecycle (slope over {waves} waves of {n} on one manager): "
        f"{cpu_slope * 1000:.2f} ms (target: <= {TARGET_CPU_MS:g} ms); fixed "
        f"{cpu_fixed:.2f} s (start-up and sync {startup_cpu:.2f} s)"
    )
    print(
        f"    wave 1 whole (start-up and sync included, the figure before the slope) "
        f"{wave1_cpu / n * 1000:.2f} ms per machine; each wave's own ms per machine "
        f"{per_wave_ms}"
    )
    print(f"    API requests per machine (slope) {request_slope:.2f}, fixed {request_fixed:.1f}")
    print(
        f"  wave 1: wall {wall:.2f} s: POSTs done after {r['post_s']:.2f} s, all Running after "
        f"{r['create_s']:.2f} s, deletion (first DELETE to last gone) {r['delete_s']:.2f} s"
    )
    print(
        f"  per machine: create->Running p50 {pct(r['to_running'], 0.5):.2f} s, "
        f"p99 {pct(r['to_running'], 0.99):.2f} s; delete->gone p50 "
        f"{pct(r['to_gone'], 0.5):.2f} s, p99 {pct(r['to_gone'], 0.99):.2f} s"
    )
    print(
        f"  at kubetrio run's default {DEFAULT_QPS:g} qps the client's bucket alone needs "
        f"{at_default:.1f} s for the manager's {manager_requests} requests (API + cloud)"
    )
    print(
        f"  baseline (bare POST+DELETE of {n} machines, no manager): "
        + ", ".join(f"{b:.2f} s" for b in r["baseline_s"])
        + f"; wall/baseline {wall / baseline:.1f}"
    )
    print(
        f"  API requests per machine: {requests / n:.2f} ({writes / n:.2f} writes, "
        f"{reads / n:.2f} reads) against a floor of {FLOOR} and the design's {DESIGN}; "
        f"watch requests {watches}, driver's {driver_requests} not counted"
    )
    print(f"    per verb and resource: {per}")
    print(
        f"    cloud calls per machine: {sum(cloud.values()) / n:.2f} "
        f"{ {k: round(v / n, 3) for k, v in sorted(cloud.items())} } (floor {FLOOR_CLOUD}); "
        f"discovery requests: {kinds.get('discovery', 0)}"
    )
    events = ", ".join(f"{k} {v / n:g}" for k, v in sorted(r["events"].items()))
    print(f"    Events per machine by object and reason: {events}")
    print(
        f"    answers >= 300 (driver's included): {errors or 'none'}; failed API requests per "
        f"machine {failed / n:.3f}"
    )
    print(
        f"    versions written: {r['machine_versions'] / n:.2f} per Machine (incl. create and "
        f"delete), {r['node_versions'] / n:.2f} per Node (incl. the cloud's registration)"
    )
    reconciles = stats["reconciles"]
    lifecycles_done = n * r["waves"]
    print(
        f"  manager: peak RSS {r['wave1_peak_rss_kb'] / 1024:.1f} MB after wave 1, "
        f"{stats['peak_rss_kb'] / 1024:.1f} MB after all {r['waves']} waves (after sync "
        f"{r['ready_rss_kb'] / 1024:.1f} MB); over all waves CPU {stats['cpu_s']:.2f} s, "
        f"reconciles per machine {sum(reconciles.values()) / lifecycles_done:.2f} {reconciles}; "
        f"emulator CPU over wave 1 {r['emulator_cpu_s']:.2f} s"
    )
    print(
        f"ratios: requests/floor {requests / n / FLOOR:.2f}, requests/design "
        f"{requests / n / DESIGN:.3f}, wall/baseline {wall / baseline:.1f} "
        f"(baseline {baseline:.2f} s)"
    )
    result: dict[str, Any] = {
        "machines": n,
        "waves": r["waves"],
        "wall_s": round(wall, 3),
        "requests_per_machine": round(requests / n, 3),
        "floor_requests_per_machine": FLOOR,
        "peak_rss_mb": round(r["wave1_peak_rss_kb"] / 1024, 1),
        "peak_rss_mb_all_waves": round(stats["peak_rss_kb"] / 1024, 1),
        "design_requests_per_machine": DESIGN,
        "writes_per_machine": round(writes / n, 3),
        "reads_per_machine": round(reads / n, 3),
        "cloud_calls_per_machine": round(sum(cloud.values()) / n, 3),
        "create_s": round(r["create_s"], 3),
        "delete_s": round(r["delete_s"], 3),
        "baseline_s": round(baseline, 3),
        "wall_over_baseline": round(wall / baseline, 2),
        "requests_over_floor": round(requests / n / FLOOR, 3),
        "requests_over_design": round(requests / n / DESIGN, 3),
        "failed_requests_per_machine": round(failed / n, 3),
        "bucket_s_at_default_qps": round(at_default, 1),
        "qps": args.qps,
        "manager_cpu_ms_per_machine": round(wave1_cpu / n * 1000, 1),  # start-up included
        "manager_cpu_ms_per_machine_slope": round(cpu_slope * 1000, 2),
        "manager_fixed_cpu_s": round(cpu_fixed, 3),
        "manager_startup_cpu_s": round(startup_cpu, 3),
        "manager_cpu_ms_per_machine_by_wave": per_wave_ms,
        "requests_per_machine_slope": round(request_slope, 3),
        "target_cpu_ms_per_machine": TARGET_CPU_MS,
        "reconciles_per_machine": round(sum(reconciles.values()) / lifecycles_done, 2),
        "emulator_cpu_s": round(r["emulator_cpu_s"], 2),
        "per_verb": per,
    }
    return result


# --------------------------------------------------------------------------- rolling update


def deployment_doc(n: int, surge: str) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NS},
        "spec": {
            "replicas": n,
            "selector": {"matchLabels": {"name": DEPLOYMENT}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": _int_or_percent(surge), "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": {"name": DEPLOYMENT}},
                "spec": {"class": {"kind": "MachineClass", "name": CLASS}},
            },
        },
    }


def _int_or_percent(value: str) -> int | str:
    return value if value.endswith("%") else int(value)


def surge_of(surge: str, n: int) -> int:
    """maxSurge resolved as the controller does (a percentage rounds up)."""
    if surge.endswith("%"):
        return -(-int(surge[:-1]) * n // 100)
    return int(surge)


async def run_rolling(args: argparse.Namespace, url: str, cloud: str) -> dict[str, Any]:
    """Manager up (machine, MachineSet and MachineDeployment controllers); the deployment made
    and all N Running; counters reset; its template moved to the other class; until N
    machines of the new class run and every old one is gone."""
    import trio

    n = args.machines
    driver = Driver(url)
    deployments = f"/apis/{MACHINE_API}/namespaces/{NS}/machinedeployments"
    manager = Child(
        "--manager-child",
        url,
        cloud,
        str(args.workers),
        str(args.qps),
        str(args.burst),
        "--rolling",
        *gc_args(args),
        stdin=True,
    )
    try:
        ready = json.loads(await trio.to_thread.run_sync(manager.wait_for, "READY "))
        await trio.sleep(0.5)
        await driver.bench("reset", "POST")
        body = json.dumps(deployment_doc(n, args.surge)).encode()
        await driver.client.request("POST", deployments, body=body)
        await driver.wait(f"{n} machines Running", lambda s: s["running"] == n)
        await driver.bench("reset-counters", "POST")
        patch = {"spec": {"template": {"spec": {"class": {"name": LARGE}}}}}
        started = time.monotonic()
        await driver.client.request(
            "PATCH",
            f"{deployments}/{DEPLOYMENT}",
            body=json.dumps(patch).encode(),
            content_type="application/merge-patch+json",
        )
        done = await driver.wait(
            f"{n} machines of the new class Running, the old ones gone",
            lambda s: s["running_large"] == n and s["machines"] == n,
        )
        wall = time.monotonic() - started
        await trio.sleep(SETTLE)
        counters = await driver.counters()
        tally = await driver.bench("tally")
        manager.close_stdin()
        stats = json.loads(await trio.to_thread.run_sync(manager.wait_for, "STATS ", 60.0))
    finally:
        manager.stop()
    return {
        "n": n,
        "wall_s": wall,
        "peak_machines": done["peak"],
        "counters": counters,
        "tally": tally,
        "manager": stats,
        "ready_rss_kb": ready["rss_kb"],
    }


def report_rolling(args: argparse.Namespace, r: dict[str, Any]) -> dict[str, Any]:
    n = r["n"]
    surge = surge_of(args.surge, n)
    waves = -(-n // surge)
    ideal = waves * args.boot
    counters: dict[str, int] = r["counters"]
    controller = {k: v for k, v in counters.items() if not k.startswith("watch ")}
    controller["patch machinedeployments"] -= 1  # the driver's, which started the rollout
    requests = sum(controller.values())
    kinds: dict[str, int] = r["tally"]["kinds"]
    cloud = {k.split()[1]: v for k, v in kinds.items() if k.startswith("cloud ")}
    errors = {k: v for k, v in r["tally"]["statuses"].items() if int(k.split()[-1]) >= 400}
    per = {k: round(v / n, 3) for k, v in sorted(controller.items())}
    wall = r["wall_s"]
    stats = r["manager"]
    over = wall / ideal if ideal else float("inf")
    print(
        f"rolling update: {n} machines to a new class, maxSurge {args.surge} ({surge}), "
        f"maxUnavailable 0, boot {args.boot:g} s, workers={args.workers}, cores={os.cpu_count()}"
    )
    print(
        f"  wall {wall:.2f} s against the ideal {waves} waves x {args.boot:g} s = {ideal:.1f} s: "
        f"{over:.2f}x; peak machines not being deleted {r['peak_machines']} (bound {n + surge})"
    )
    print(
        f"  API requests per replaced machine {requests / n:.2f} (its creation, join, drain and "
        f"deletion, and the sets' and the deployment's writes); cloud calls per replaced "
        f"machine {sum(cloud.values()) / n:.2f}"
    )
    print(f"    per verb and resource: {per}")
    print(f"    failed answers: {errors or 'none'}")
    print(
        f"  manager: peak RSS {stats['peak_rss_kb'] / 1024:.1f} MB, CPU {stats['cpu_s']:.2f} s, "
        f"reconciles {stats['reconciles_by_controller']}"
    )
    return {
        "case": "rolling-update",
        "machines": n,
        "max_surge": surge,
        "boot_s": args.boot,
        "wall_s": round(wall, 3),
        "ideal_s": ideal,
        "wall_over_ideal": round(over, 2),
        "peak_machines": r["peak_machines"],
        "requests_per_replaced_machine": round(requests / n, 3),
        "cloud_calls_per_replaced_machine": round(sum(cloud.values()) / n, 3),
        "failed_requests": sum(errors.values()),
        "peak_rss_mb": round(stats["peak_rss_kb"] / 1024, 1),
        "manager_cpu_s": round(stats["cpu_s"], 2),
        "reconciles": stats["reconciles_by_controller"],
        "per_verb": per,
    }


def embedded_demo() -> dict[str, float]:
    """``kubetrio run --embedded`` to its exit, in a folder of its own: wall seconds, and their
    share of the README's minute."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "kubetrio.cmd.main",
            "run",
            "--embedded",
            "--embedded-dir",
            str(Path(folder) / "cluster"),
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "0",
        ]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(
            f"the embedded demo failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    summary = [line for line in done.stdout.splitlines() if line.startswith("summary machines=")]
    print(
        f"embedded demo: {wall:.1f} s ({wall / DEMO_PROMISE:.2f} of the README's minute); "
        + (summary[-1] if summary else "no summary line"),
        flush=True,
    )
    return {"demo_s": round(wall, 1), "demo_over_promise": round(wall / DEMO_PROMISE, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=500, help="N (default 500)")
    parser.add_argument(
        "--waves",
        type=int,
        default=3,
        help="N machines' lifecycles this many times on one manager (default 3; at least 2)",
    )
    parser.add_argument("--workers", type=int, default=5, help="machine controller workers")
    parser.add_argument(
        "--qps", type=float, default=0.0, help="manager client QPS (default 0: no limit)"
    )
    parser.add_argument("--burst", type=int, default=30, help="manager client burst")
    parser.add_argument(
        "--rolling",
        action="store_true",
        help="the rolling-update case: an N-machine MachineDeployment rolled to a new class",
    )
    parser.add_argument("--surge", default="10%", help="its maxSurge (default 10%%)")
    parser.add_argument(
        "--boot", type=float, default=None, help="VM boot seconds (default 0; --rolling: 2)"
    )
    parser.add_argument(
        "--gc",
        choices=("tuned", "default"),
        default=None,
        help="the manager's collector policy (default: kubetrio run's)",
    )
    parser.add_argument(
        "--simulate", action="store_true", help="the emulator runs the simulated cluster too"
    )
    parser.add_argument(
        "--demo", action="store_true", help="also time the embedded demo (the README's minute)"
    )
    parser.add_argument("--emulator-child", type=int, metavar="WINDOW")
    parser.add_argument(
        "--manager-child", nargs=5, metavar=("URL", "CLOUD", "WORKERS", "QPS", "BURST")
    )
    args = parser.parse_args()
    if args.boot is None:
        args.boot = 2.0 if args.rolling else 0.0
    if args.waves < 2:
        parser.error(f"--waves: {args.waves} is fewer than the 2 a slope needs")
    if args.emulator_child:
        emulator_child(args.emulator_child, args.boot, args.simulate)
        return
    if args.manager_child:
        url, cloud, workers, qps, burst = args.manager_child
        manager_child(url, cloud, int(workers), float(qps), int(burst), args.rolling, args.gc)
        return

    import trio

    from kubetrio.runtime.util.log import configure_logging

    configure_logging(level="warning")
    emulator = Child(
        "--emulator-child",
        str(max(10_000, 40 * args.machines)),
        "--boot",
        str(args.boot),
        *(["--simulate"] if args.simulate else []),
    )
    try:
        cloud = emulator.wait_for("cloud=")
        url = emulator.wait_for("url=")
        measured = trio.run(run_rolling if args.rolling else run, args, url, cloud)
    finally:
        emulator.stop()
    result = (report_rolling if args.rolling else report)(args, measured)
    if args.demo:
        result.update(embedded_demo())
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
