"""Scale: one manager with every built-in controller over N Machines, N Nodes and 10·N Pods.

Why: the other benchmarks time one path at a time; this one asks whether a single ``kubetrio
run`` holds a large pool — how long it takes to sync, how much memory it keeps, how fast the
pool comes up, what it costs when nothing happens, and what a Prometheus scrape costs.

Three processes on the real clock (this machine has 2 shared cores):

* the **emulator** (``--emulator-child``): ``serve_world()`` with the simulated storage
  service (what ``storagegc``/``nodedelete`` call) and the always-present simulated cloud (the
  ``sim`` driver's), each on a port of its own, no simulated cluster (pods are plain objects:
  nothing evicts, schedules or runs them); the machine CRDs, one MachineClass ``provider: sim``
  booting at once. A store hook timestamps each Machine's creation and first ``Running``
  (``time.monotonic()``, one clock system-wide on Linux, so the driver can compare).
* the **manager**: ``kubetrio run`` itself (every default controller: machine, machineset,
  machinedeployment, safety, nodedelete, storagegc), from the emulator's kubeconfig, with the
  client rate limit lifted (``--kube-api-qps 1e6``: the figure is what the code and the cores
  can do, not a bucket) and metrics and probes on free local ports.
* this process, the **driver**.

What is measured, in order:

1. ``empty``: a manager against the empty cluster (CRDs and the class only): seconds from spawn
   until ``/readyz`` answers 200, then its RSS (``VmRSS``) — the baseline for RSS per machine.
2. Seeding: 10·N Pods (``spec.nodeName`` spread over the N Machines' future Node names,
   ``phase: Running``), written in the emulator's process (not timed as the manager's work).
3. ``cold_sync_s``: a fresh manager, spawn until ``/readyz`` answers 200 (its caches listed the
   10·N Pods and everything else); ``sync_over_empty`` subtracts the empty manager's start.
4. ``running_s``: the driver POSTs N Machines (16 in flight); from the first POST until the
   emulator saw the last Machine ``Running`` (the cloud registered each VM's Node, the storage
   service its storage node).
   ``manager_cpu_ms_per_machine`` / ``emulator_cpu_ms_per_machine``: each process's CPU over
   the same span, over N (CPU time is far less noisy than wall time on a shared machine).
   ``requests_per_machine``: the requests the emulator served from just before the first POST
   until the last Running (its own per verb/resource counters, ``/_emulator/counters``), less
   the driver's N POSTs, over N — by ``verb resource[/sub]``, so a request MCM would not make
   shows; ``idle_requests``: the same counts over the idle window below (trailing work).
5. ``idle_cpu_pct``: the manager's CPU (``utime+stime`` from ``/proc/<pid>/stat``) over
   ``--idle`` seconds (30; ``--quick``: 5) once all are Running, as a percentage of one core;
   also per 5 s slice (``idle_cpu_slices_pct``), so trailing work after the last Running shows.
   Then ``settled_idle_cpu_pct``: once the manager is idle by its own account — the emulator
   served no request for a second and the manager's ``/metrics`` shows every ``workqueue_depth``
   and ``controller_runtime_active_workers`` at 0 (``settle_s``: seconds from the end of the
   first window until then; the checks' scrapes fall before the window) — the same CPU measure
   over another ``--idle`` seconds: the cost of a pool at rest, with no trailing work in it. Both
   are reported; the first is the one that shows trailing work (the Events still queued at the
   last Running are written in its first seconds).
6. RSS (``/proc/<pid>/status``): the manager's ``peak`` (``VmHWM``) and ``steady`` (``VmRSS``
   after the idle window); the same for the emulator, separately. ``rss_per_machine_kib`` =
   (steady - the empty manager's RSS) / N: one Machine with its Node and 10 Pods.
7. ``/metrics``: five plain GETs (no gzip) — median seconds and body size; against the same
   run's ``prometheus_client`` registry holding the same number of series (one labelled Gauge
   family, ``generate_latest``), ``scrape_over_plain``. From the scrape, ``events_dropped``
   (``kubetrio_events_dropped_total`` by reason): Events recorded but never written.

``python tests/bench/scale.py [--machines N] [--idle S] [--metrics-per-machine false]
[--machine-workers W] [--gc tuned|default] [--profile-emulator FILE]``; ``--gc`` is passed to the
manager (default: ``kubetrio run``'s own, for an A/B of ``kubetrio.runtime.manager.gctuning``); the
last samples the emulator with py-spy (folded raw stacks, 200 Hz) from just before the first POST
until the last Running, for inclusive time per request phase (a profiled run's figures are not
compared with others); ``--quick`` is CI's size (N = 100, 5 s idle). Last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/scale.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any

NS = "default"
CLASS = "bench"
MACHINE_API = "machine.sapcloud.io/v1alpha1"
MACHINES_PATH = f"/apis/{MACHINE_API}/namespaces/{NS}/machines"
TOKEN = "kubetrio-bench"
IN_FLIGHT = 16
PODS_PER_NODE = 10
SCRAPES = 5
POLL = 0.2  # the driver's look at the emulator's counts while the pool comes up
TIMEOUT = 1800.0
IDLE_SLICE = 5.0  # the idle window is also reported in slices: trailing work shows early


def node_of(i: int) -> str:
    return f"m-{i:05d}"


# --------------------------------------------------------------------------- emulator child


def seed_docs() -> list[dict[str, Any]]:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{CLASS}-secret", "namespace": NS},
        "data": {"userData": base64.b64encode(b"#!/bin/sh\n<<BOOTSTRAP_TOKEN>>\n").decode()},
    }
    machine_class = {
        "apiVersion": MACHINE_API,
        "kind": "MachineClass",
        "metadata": {"name": CLASS, "namespace": NS},
        "provider": "sim",
        "providerSpec": {"region": "eu-1", "bootSeconds": 0},
        "secretRef": {"name": f"{CLASS}-secret", "namespace": NS},
    }
    return [secret, machine_class]


def pod_doc(i: int, nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{i:07d}", "namespace": NS, "labels": {"app": "bench"}},
        "spec": {
            "nodeName": node_of(i % nodes),
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
        },
        "status": {"phase": "Running"},
    }


class Tracker:
    """Machines created and first seen Running, O(1) per store event."""

    def __init__(self) -> None:
        self.created: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.nodes = 0

    def hook(self, rt: Any, ev: Any) -> None:
        if rt.kind == "Node":
            self.nodes += {"ADDED": 1, "DELETED": -1}.get(ev.type, 0)
            return
        if rt.kind != "Machine" or ev.type == "DELETED":
            return
        obj = ev.entry.obj
        name = obj["metadata"]["name"]
        now = time.monotonic()
        self.created.setdefault(name, now)
        phase = ((obj.get("status") or {}).get("currentStatus") or {}).get("phase")
        if phase == "Running":
            self.running.setdefault(name, now)

    def state(self) -> dict[str, Any]:
        return {
            "machines": len(self.created),
            "running": len(self.running),
            "nodes": self.nodes,
            "first_created": min(self.created.values(), default=0.0),
            "last_running": max(self.running.values(), default=0.0),
        }


def emulator_child(window: int) -> None:
    import trio

    from kubetrio.cmd.assets import crd_documents
    from kubetrio.emulator import EmulatorOptions
    from kubetrio.emulator.http import Request, Response, json_response
    from kubetrio.sim import serve_world
    from kubetrio.sim.cloud import SimulatedCloud
    from kubetrio.sim.storage import serve_storage_sim

    async def main() -> None:
        options = EmulatorOptions(window=window, token=TOKEN)
        async with serve_world(options=options) as emu, serve_storage_sim(emu) as storage:
            for doc in [*crd_documents(), *seed_docs()]:
                emu.create(doc)
            tracker = Tracker()
            emu.store.subscribe(tracker.hook)

            async def bench(req: Request) -> Response:
                what = req.path.rsplit("/", 1)[-1]
                if what == "state":
                    return json_response(tracker.state())
                if what == "seed" and req.method == "POST":
                    pods, nodes = int(req.query["pods"]), int(req.query["nodes"])
                    started = time.monotonic()
                    for i in range(pods):
                        emu.create(pod_doc(i, nodes))
                    return json_response({"seconds": time.monotonic() - started})
                return json_response({"error": f"no bench route {req.method} {req.path}"}, 404)

            emu.mount("/_bench", bench)
            cloud = emu.extension(SimulatedCloud).url
            print(
                f"url={emu.url} kubeconfig={emu.kubeconfig_path} cloud={cloud} "
                f"storage={storage.url}",
                flush=True,
            )
            await trio.sleep_forever()

    trio.run(main)


# --------------------------------------------------------------------------- measuring


def proc_status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of a process, in KiB."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of ``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 60.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""
    except OSError:
        return 0, b""


class Emulator:
    """The emulator child; its first stdout line says where it serves."""

    def __init__(self, window: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--emulator-child", str(window)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("url="):
            raise SystemExit(f"emulator child did not start: {line!r}")
        words = dict(word.split("=", 1) for word in line.split())
        self.url, self.kubeconfig = words["url"], words["kubeconfig"]
        self.cloud, self.storage = words["cloud"], words["storage"]
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class Manager:
    """``kubetrio run`` against the emulator, on free local ports; ``ready_s`` from spawn
    until ``/readyz`` answered 200."""

    def __init__(self, emu: Emulator, log: Path, per_machine: bool, extra: list[str]) -> None:
        self.metrics = f"http://127.0.0.1:{free_port()}/metrics"
        probes = free_port()
        self.log = log
        kubetrio = str(Path(sys.executable).with_name("kubetrio"))
        args = [
            kubetrio,
            "run",
            "--kubeconfig",
            emu.kubeconfig,
            "--metrics-bind-address",
            self.metrics.removeprefix("http://").removesuffix("/metrics"),
            "--health-probe-bind-address",
            f"127.0.0.1:{probes}",
            "--kube-api-qps",
            "1e6",
            "--kube-api-burst",
            "1000000",
            "--sim-cloud-url",
            emu.cloud,
            "--storage-backend-url",
            emu.storage,
            "--log-level",
            "warning",
            f"--metrics-per-machine={'true' if per_machine else 'false'}",
            *extra,
        ]
        started = time.monotonic()
        with log.open("w") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        readyz = f"http://127.0.0.1:{probes}/readyz"
        while http_get(readyz, timeout=5)[0] != 200:
            if self.proc.poll() is not None or time.monotonic() - started > TIMEOUT:
                raise SystemExit(f"manager never ready; its log:\n{log.read_text()[-3000:]}")
            time.sleep(0.05)  # polling an HTTP probe: there is nothing else to wait on
        self.ready_s = time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def create_machines(emu: Emulator, n: int) -> float:
    """POST the N Machines, IN_FLIGHT at a time; seconds it took."""
    import trio

    from kubetrio.runtime.client.typed import Client

    async def main() -> None:
        client = Client.from_url(emu.url, token=TOKEN, qps=0, max_concurrency=IN_FLIGHT)
        limiter = trio.CapacityLimiter(IN_FLIGHT)

        async def post(i: int) -> None:
            doc = {
                "apiVersion": MACHINE_API,
                "kind": "Machine",
                "metadata": {"name": node_of(i), "namespace": NS},
                "spec": {"class": {"kind": "MachineClass", "name": CLASS}},
            }
            async with limiter:
                await client.request("POST", MACHINES_PATH, body=json.dumps(doc).encode())

        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(post, i)

    started = time.monotonic()

    trio.run(main)
    return time.monotonic() - started


def wait_settled(emu: Emulator, manager: Manager) -> None:
    """Until the emulator served no request for a second and the manager's work queues are
    empty with no worker busy (its own ``/metrics``)."""
    deadline = time.monotonic() + TIMEOUT
    last = emu.call("GET", "/_emulator/counters")
    while time.monotonic() < deadline:
        time.sleep(1.0)  # "no request for a second" is measured by waiting that second
        now = emu.call("GET", "/_emulator/counters")
        if now != last:
            last = now
            continue
        code, body = http_get(manager.metrics)
        busy = [
            line
            for line in body.splitlines()
            if line.startswith((b"workqueue_depth{", b"controller_runtime_active_workers{"))
            and float(line.split()[-1]) != 0
        ]
        if code == 200 and not busy:
            return
        last = emu.call("GET", "/_emulator/counters")
    raise SystemExit("the manager never settled")


def counts_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Requests per ``verb resource[/sub]`` served between two counter snapshots."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def plain_scrape_seconds(series: int) -> float:
    """Median ``generate_latest`` of a plain registry with ``series`` labelled gauge samples."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    registry = CollectorRegistry()
    gauge = Gauge("bench_series", "same number of series", ["name", "namespace"], registry=registry)
    for i in range(series):
        gauge.labels(f"m-{i:06d}", NS).set(i)
    times = []
    for _ in range(SCRAPES):
        started = time.perf_counter()
        generate_latest(registry)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def profile(pid: int, path: str | None) -> subprocess.Popen[bytes] | None:
    """py-spy sampling ``pid`` into ``path`` (folded raw stacks) while the pool comes up: the
    emulator's inclusive time per request phase. Sampling costs the target little CPU but
    some wall time, so figures from a profiled run are not compared with unprofiled ones."""
    if path is None:
        return None
    args = ["py-spy", "record", "--format", "raw", "-r", "200", "-p", str(pid)]
    spy = subprocess.Popen([*args, "-o", path], stdout=subprocess.DEVNULL)
    time.sleep(1.0)  # py-spy attaches before the first POST
    return spy


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = args.machines
    r: dict[str, Any] = {"machines": n, "pods": PODS_PER_NODE * n, "idle_s": args.idle}
    emu = Emulator(window=max(10_000, 4 * n))
    logs = Path(tempfile.mkdtemp(prefix="kubetrio-scale-"))
    manager: Manager | None = None
    extra = ["--machine-workers", str(args.machine_workers)] if args.machine_workers else []
    extra += ["--gc", args.gc] if args.gc else []
    try:
        r["emulator_empty_rss_kib"] = proc_status(emu.proc.pid)["VmRSS"]
        empty = Manager(emu, logs / "empty.log", args.metrics_per_machine, extra)
        time.sleep(1.0)  # let its start-up garbage settle before reading RSS
        r["empty_ready_s"] = empty.ready_s
        r["empty_rss_kib"] = proc_status(empty.proc.pid)["VmRSS"]
        empty.stop()

        r["seed_s"] = emu.call("POST", f"/_bench/seed?pods={PODS_PER_NODE * n}&nodes={n}")[
            "seconds"
        ]
        manager = Manager(emu, logs / "manager.log", args.metrics_per_machine, extra)
        r["cold_sync_s"] = manager.ready_s
        r["rss_after_sync_kib"] = proc_status(manager.proc.pid)["VmRSS"]

        before = emu.call("GET", "/_emulator/counters")
        spy = profile(emu.proc.pid, args.profile_emulator)
        cpu_before = cpu_seconds(manager.proc.pid), cpu_seconds(emu.proc.pid)
        r["post_s"] = create_machines(emu, n)
        deadline = time.monotonic() + TIMEOUT
        while (state := emu.call("GET", "/_bench/state"))["running"] < n:
            if time.monotonic() > deadline or manager.proc.poll() is not None:
                raise SystemExit(f"not all Running: {state}")
            time.sleep(POLL)
        r["running_s"] = state["last_running"] - state["first_created"]
        r["nodes"] = state["nodes"]
        at_running = emu.call("GET", "/_emulator/counters")
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait()
        # CPU per machine until the last Running: less noisy than wall time on a shared machine
        # (the driver's polls add a little to the emulator's).
        r["manager_cpu_ms_per_machine"] = 1000 * (cpu_seconds(manager.proc.pid) - cpu_before[0]) / n
        r["emulator_cpu_ms_per_machine"] = 1000 * (cpu_seconds(emu.proc.pid) - cpu_before[1]) / n
        made = counts_between(before, at_running)
        made["create machines"] = made.get("create machines", 0) - n  # the driver's own POSTs
        r["requests_per_machine"] = {k: v / n for k, v in made.items() if v}

        cpu0, emu_cpu0, t0 = cpu_seconds(manager.proc.pid), cpu_seconds(emu.proc.pid), time.time()
        slices, last, at = [], cpu0, t0
        while (now := time.time()) < t0 + args.idle:
            time.sleep(min(IDLE_SLICE, t0 + args.idle - now))  # the window is the measure
            cpu, now = cpu_seconds(manager.proc.pid), time.time()
            slices.append(round(100 * (cpu - last) / (now - at), 2))
            last, at = cpu, now
        wall = time.time() - t0
        r["idle_cpu_pct"] = 100 * (cpu_seconds(manager.proc.pid) - cpu0) / wall
        r["idle_cpu_slices_pct"] = slices
        r["emulator_idle_cpu_pct"] = 100 * (cpu_seconds(emu.proc.pid) - emu_cpu0) / wall
        r["idle_requests"] = counts_between(at_running, emu.call("GET", "/_emulator/counters"))

        started = time.monotonic()
        wait_settled(emu, manager)
        r["settle_s"] = time.monotonic() - started
        cpu0, t0 = cpu_seconds(manager.proc.pid), time.time()
        time.sleep(args.idle)  # the window is the measure
        r["settled_idle_cpu_pct"] = (
            100 * (cpu_seconds(manager.proc.pid) - cpu0) / (time.time() - t0)
        )

        status = proc_status(manager.proc.pid)
        r["peak_rss_kib"], r["steady_rss_kib"] = status["VmHWM"], status["VmRSS"]
        status = proc_status(emu.proc.pid)
        r["emulator_peak_rss_kib"], r["emulator_steady_rss_kib"] = status["VmHWM"], status["VmRSS"]
        r["rss_per_machine_kib"] = (r["steady_rss_kib"] - r["empty_rss_kib"]) / n

        times, size, body = [], 0, b""
        for _ in range(SCRAPES):
            started = time.perf_counter()
            code, body = http_get(manager.metrics)
            times.append(time.perf_counter() - started)
            if code != 200:
                raise SystemExit(f"/metrics answered {code}")
            size = len(body)
        r["scrape_s"] = statistics.median(times)
        r["scrape_bytes"] = size
        series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        r["scrape_series"] = series
        # Events the manager recorded but never wrote (kubetrio_events_dropped_total): a pool
        # that comes up faster by dropping its Events would not be faster.
        r["events_dropped"] = {
            line.split(b'reason="')[1].split(b'"')[0].decode(): float(line.split()[-1])
            for line in body.splitlines()
            if line.startswith(b"kubetrio_events_dropped_total{")
        }
        r["plain_scrape_s"] = plain_scrape_seconds(series)
    finally:
        if manager is not None:
            manager.stop()
        emu.stop()
    return r


def report(args: argparse.Namespace, r: dict[str, Any]) -> dict[str, Any]:
    mib = 1 / 1024
    r["sync_over_empty_s"] = r["cold_sync_s"] - r["empty_ready_s"]
    r["scrape_over_plain"] = r["scrape_s"] / r["plain_scrape_s"]
    n = r["machines"]
    print(
        f"machines={n} pods={r['pods']} nodes={r['nodes']} cores={os.cpu_count()} "
        f"per-machine series={'on' if args.metrics_per_machine else 'off'} "
        f"machine workers={args.machine_workers or 'default'} gc={args.gc or 'as kubetrio run'}"
    )
    print(
        f"  cold sync {r['cold_sync_s']:.1f}s (empty manager {r['empty_ready_s']:.1f}s: "
        f"sync {r['sync_over_empty_s']:.1f}s); seeding {r['seed_s']:.1f}s"
    )
    print(f"  all Running {r['running_s']:.1f}s after the first POST (POSTs {r['post_s']:.1f}s)")
    print(
        f"  CPU per machine until then: manager {r['manager_cpu_ms_per_machine']:.1f} ms, "
        f"emulator {r['emulator_cpu_ms_per_machine']:.1f} ms"
    )
    per = r["requests_per_machine"]
    print(
        f"  requests per machine until the last Running: {sum(per.values()):.1f} ("
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]))
        + ")"
    )
    print(f"  events dropped by the manager: {r['events_dropped']}")
    idle = r["idle_requests"]
    print(
        f"  requests in the idle window: {sum(idle.values())} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(idle.items(), key=lambda kv: -kv[1]))
        + ")"
    )
    print(
        f"  manager RSS: peak {r['peak_rss_kib'] * mib:.0f} MiB, steady "
        f"{r['steady_rss_kib'] * mib:.0f} MiB, after sync {r['rss_after_sync_kib'] * mib:.0f} "
        f"MiB, empty {r['empty_rss_kib'] * mib:.0f} MiB; "
        f"{r['rss_per_machine_kib']:.1f} KiB per machine (+node, +10 pods)"
    )
    print(
        f"  emulator RSS: peak {r['emulator_peak_rss_kib'] * mib:.0f} MiB, steady "
        f"{r['emulator_steady_rss_kib'] * mib:.0f} MiB (empty "
        f"{r['emulator_empty_rss_kib'] * mib:.0f} MiB)"
    )
    print(
        f"  idle CPU over {r['idle_s']:.0f}s: manager {r['idle_cpu_pct']:.2f}% of a core, "
        f"emulator {r['emulator_idle_cpu_pct']:.2f}%; manager per {IDLE_SLICE:.0f}s: "
        f"{r['idle_cpu_slices_pct']}"
    )
    print(
        f"  settled idle CPU over {r['idle_s']:.0f}s (settled {r['settle_s']:.1f}s after the "
        f"first window): manager {r['settled_idle_cpu_pct']:.2f}% of a core"
    )
    print(
        f"  /metrics: {r['scrape_s'] * 1000:.1f} ms, {r['scrape_bytes'] / 1e6:.2f} MB, "
        f"{r['scrape_series']} series; a plain prometheus_client registry of as many series "
        f"{r['plain_scrape_s'] * 1000:.1f} ms: ratio {r['scrape_over_plain']:.2f}"
    )
    return r


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=1000, help="N (default 1000)")
    parser.add_argument("--idle", type=float, default=30.0, help="idle window, s (default 30)")
    parser.add_argument(
        "--metrics-per-machine",
        type=_bool,
        default=True,
        help="the manager's --metrics-per-machine (default true)",
    )
    parser.add_argument(
        "--machine-workers", type=int, default=0, help="the manager's (default: kubetrio run's)"
    )
    parser.add_argument(
        "--gc",
        choices=("tuned", "default"),
        default=None,
        help="the manager's --gc (default: kubetrio run's)",
    )
    parser.add_argument("--quick", action="store_true", help="CI's size: N=100, 5 s idle")
    parser.add_argument(
        "--profile-emulator", metavar="FILE", help="py-spy raw stacks of the emulator to FILE"
    )
    parser.add_argument("--emulator-child", type=int, metavar="WINDOW")
    args = parser.parse_args()
    if args.emulator_child:
        emulator_child(args.emulator_child)
        return
    if args.quick:
        args.machines, args.idle = 100, 5.0
    result = report(args, run(args))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
