"""Reconcile throughput: kubetrio in-process and end to end, against kopf and controller-runtime.

Servers: the emulator for (1)-(3); the emulator and a real kube-apiserver side by side for (4);
the real kube-apiserver for (5), kubetrio against controller-runtime.

(1) ``inprocess``: ``Controller`` (metrics on, private ``CollectorRegistry``, ``--workers``)
    with a no-op reconciler; the clock runs from adding N distinct ``ObjectKey``s to its queue
    until the workers reconciled all of them. No HTTP. Median of ``--rounds`` (default 5).
(2) ``e2e``: emulator -> watch event -> informer -> queue -> worker -> no-op reconciler. A
    ``Manager`` with one ``for_(ConfigMap, namespace=NS)`` controller (``--workers``, default 4)
    runs, has synced on an empty namespace and has reconciled one probe object (so its watch is
    open); then N ConfigMaps are created while it runs. Three figures, each from its own fresh
    emulator:

    * ``e2e`` (headline, "burst"): the N objects are created in one go inside the emulator
      (which therefore serves no watch bytes meanwhile); the clock runs from the moment the
      last one was committed until N distinct keys were reconciled at least once. Creation is
      excluded, so it cannot be the bottleneck: this is watch delivery + decode + informer +
      queue + reconcile of an N-event backlog (the emulator alone drains such a backlog to a
      plain socket reader far faster than either consumer consumes it).
    * ``e2e_streamed``: the clock runs from the start of the creation, which yields to the
      emulator's event loop every ``BATCH`` objects so watch events flow while it goes on.
      The emulator's single core then both creates and serves, so this figure is bounded by
      its creation rate (printed as ``created …/s``); it is an end-to-end lower bound.
    * ``e2e_initial``: the N objects exist first; the clock runs from ``Manager.run`` until N
      distinct keys were reconciled (LIST + initial adds at low priority). The default client
      (20 qps / burst 30) is used: one LIST, and no-op reconciles make no requests.
(3) ``kopf``: a kopf operator with one async no-op ``@kopf.on.event("v1", "configmaps")``
    handler in a child process, the same three scenarios and clocks against fresh emulators;
    the handler counts distinct names in memory and prints ``time.monotonic()`` when it has
    seen the N-th (CLOCK_MONOTONIC is one system-wide clock on Linux, so the parent can
    compare it with the emulator's and its own). The probe object plays the role of "synced".

(4) ``written->reconciled`` on **both servers**, the emulator and a real kube-apiserver
    (etcd + kube-apiserver from ``KUBEBUILDER_ASSETS``, ``tests/bench/realserver.py``), the
    same work on each in the same run: the same ``Manager`` as in (2) syncs on an empty
    namespace and reconciles a probe; then a writer child process POSTs ``--cross-objects``
    ConfigMaps one after the other over HTTP (the emulator is no longer driven from inside:
    the real server cannot be), noting when each answer arrived. Compared, per server and as
    real/emulator: the **latency** of each object from its POST being sent to its first
    reconcile (p50, p99; the write's own time included: on the real server the watch event
    often outruns the POST's answer, so the time from the answer, also printed, goes negative),
    and the consumer's
    **CPU per event** (from the first written object's reconcile to the N-th's, over N - 1).
    The writer sets
    the pace (the real server takes writes slower, so its window is longer and the manager's
    idle cost, a few ms per second, weighs a little more per event); its rate is printed.
    The real server's events are larger too: its objects carry ``managedFields``, and it
    speaks only TLS. kopf is not run here; (3) compares it on the emulator.
(5) **controller-runtime** on the **real server** only (``--cr-objects``, ``crbaseline.py``):
    ``crbench reconcile`` (controller-runtime v0.24.1: one no-op reconciler ``For(ConfigMap)``
    in one namespace, the same ``--workers``, its defaults otherwise: protobuf, priority queue,
    full typed cache) beside the same kubetrio ``Manager`` as in (2), one after the other
    against the same kube-apiserver, the order alternating per round. *Watched events*: each
    syncs on an empty namespace of its own and reconciles a probe; ``crbench create`` (one
    writer for both: protobuf, 8 requests at once) then writes N ConfigMaps; CPU per event is
    the consumer's CPU from the probe's reconcile to the N-th name's, over N. *Initial*: N
    ConfigMaps exist in a third namespace; from just before the manager starts (crbench's
    ``STARTUP``), the time to the first reconcile and to all N reconciled, and CPU per object.
    Printed as kubetrio, controller-runtime and kt/cr (< 1: kubetrio spends or takes less).

Each e2e/kopf scenario runs ``--repeat`` times (default 3), interleaved; medians are reported.
``e2e_over_kopf`` compares the headline (burst) figures; the other two ratios are printed too.

Both consumers count the same thing the same way: distinct object names in a ``set`` of
``str`` (kubetrio's reconciler used to keep ``ObjectKey``s, tuples the garbage collector tracks,
so kubetrio alone paid for the benchmark's bookkeeping in its full collections).

CPU per object, beside each rate: the consumer process's CPU time (``time.process_time()``,
all its threads) from the moment it had handled the probe object (initial: from the start of
its clock) until it had seen the N-th name, divided by N. In the burst scenario the consumer
has nothing else to do meanwhile, so this is its cost per event; ``kopf_cpu_over_e2e`` is the
ratio. On a shared machine a consumer gets whatever share of a core the others leave it, and
the wall-clock rates move with that share from one round to the next, widely for the same code
on the same N; CPU per object does not.

Garbage collector (``--gc``, default ``tuned``): for each round, in both consumer processes
alike (kubetrio's and kopf's child), what exists before the round is frozen (``gc.collect();
gc.freeze()``, as a long-running service does after start-up) and the young-generation
threshold is 10 000 allocations instead of CPython's 700: ``kubetrio run``'s own ``--gc tuned``
(``kubetrio.runtime.manager.gctuning``), applied at the start of each round. Why: with CPython's
defaults a round of kubetrio's ran several full collections, each walking the whole heap, and
how many landed inside a window depended on where the heap stood - one source of rounds that
were slow for no reason of their own. ``--gc default`` leaves both as CPython sets them.

Long enough to repeat (``--min-window``, default 2 s): a 10 000-object window of kubetrio's is
short enough for scheduling noise on a shared machine to move a run a long way. So the sizes are
calibrated first: the in-process N is raised until one round of kubetrio's work lasts at least
``--min-window`` seconds, and the e2e N likewise from one calibration burst's CPU per object (N
such that kubetrio's work would fill the window on a core of its own: calibrating on the wall
clock picked very different N on a loaded and on a quiet machine, so two runs did not even
measure the same thing); kopf then gets the same N: the same objects for both sides. Each
figure's spread over its rounds, (max - min) / median, is printed beside its median, so a run
says itself whether it can be trusted; two runs on a busy machine can still disagree, which is
the machine's noise, not the window's length. What it measured, when and under what load:
``docs/performance.md``.

Process layout (the machine this was written for has 2 cores): the emulator always runs in a
child process (``--serve-emulator``: ``serve_world()`` in its own trio run, with a watch
window larger than N), so the API server and the controller under test each get a core and a
GIL of their own. kubetrio runs in this process, kopf in a child process (``--kopf-child``);
they never run at the same time. Objects are created Python-side in the emulator process
(``emu.create``: the same store path an HTTP POST ends in, with the same watch events),
triggered by one request to a route this benchmark mounts there (``/_bench/create``), because
POSTing 10 000 objects over HTTP from a third process would itself be slower than kubetrio.

Fairness of the kopf side (kopf 1.x, asyncio, standalone):

* ``@kopf.on.event``: called for every watch event (and every listed object), without kopf's
  state machinery: no ``last-handled-configuration`` / progress annotations, no finalizers, no
  PATCH per object. ``@kopf.on.create`` would PATCH each object once (its diff base), i.e. write
  to the API, which a no-op reconcile does not; on.event is the closest no-op.
* ``async def`` handler (a sync one would hop through a thread pool).
* ``standalone=True`` (no peering: the emulator serves no KopfPeering CRD and none is needed),
  ``settings.scanning.disabled = True`` (no CRD/namespace watching), ``posting.enabled = False``
  (no k8s Events from log messages), log level WARNING (``quiet``), ``namespaces=[NS]``.
* kopf's defaults otherwise (one worker task per object, default batching, no uvloop since it
  is not a kopf dependency). Logged in via the kubeconfig the emulator writes (``KUBECONFIG``;
  kopf's pykube login). Nothing had to be worked around in the emulator for this
  configuration: with peering and scanning off kopf only LISTs and WATCHes configmaps.
* The clock for the initial path starts in kopf's ``@kopf.on.startup`` handler, so interpreter
  and import time are excluded (as they are for kubetrio).

``python tests/bench/reconcile.py [--objects N] [--min-window S]`` (default 10 000 and 2 s, i.e.
N grows to fill 2 s; CI: ``--objects 2000 --repeat 1 --min-window 0 --cross-objects 500
--cr-objects 1000``; ``--cr-only`` runs (5) alone). Prints the targets (in-process >=
150 000/s; e2e >= 25x kopf) with pass/MISS and the CPU ratio; last line ``RESULT {json}``.
Needs the ``bench`` extra (``kopf``); ``--skip-kopf`` runs without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/reconcile.py``: keep this folder (queue.py!) from shadowing stdlib.
# Its helpers (realserver.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import contextlib
import http.client
import json
import os
import queue
import statistics
import subprocess
import tempfile
import threading
import time
from typing import Any

NS = "bench"
PREFIX = "cm-"
BATCH = 100  # objects created between two yields to the emulator's event loop
WORKERS = 4
INPROCESS_TARGET = 150_000.0
E2E_OVER_KOPF_TARGET = 25.0
TIMEOUT = 600.0
MODES = ("burst", "streamed", "initial")
SUFFIX = {"burst": "", "streamed": "_streamed", "initial": "_initial"}
CROSS_FIGURES = {
    "cpu_us": "CPU µs per event",
    "latency_p50_ms": "latency p50 (ms)",
    "latency_p99_ms": "latency p99 (ms)",
    "after_answer_p50_ms": "after the answer p50 (ms)",
    "written_per_s": "written per second",
}

gc_mode = "tuned"  # --gc default: leave both consumers' collectors as CPython sets them


def consumer_gc() -> contextlib.AbstractContextManager[None]:
    """The same collector settings in both consumers for one round (see the docstring):
    ``kubetrio run``'s policy, from ``kubetrio.runtime.manager.gctuning``."""
    from kubetrio.runtime.manager.gctuning import tuned_gc

    return tuned_gc("default" if gc_mode == "default" else "tuned")


# --------------------------------------------------------------------------- emulator child


def configmap(name: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench"}},
        "data": {"index": str(i), "payload": "x" * 64},
    }


def serve_emulator_child(kubeconfig: str, window: int) -> None:
    import trio

    from kubetrio.emulator import EmulatorOptions
    from kubetrio.emulator.http import Request, Response, json_response
    from kubetrio.sim import serve_world

    async def main() -> None:
        options = EmulatorOptions(kubeconfig_path=Path(kubeconfig), window=window)
        async with serve_world(options=options) as emu:
            emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

            async def create(req: Request) -> Response:
                n = int(req.query.get("n", "1"))
                prefix = req.query.get("prefix", PREFIX)
                batch = int(req.query.get("batch", "0")) or n + 1
                start = time.monotonic()
                for i in range(n):
                    emu.create(configmap(f"{prefix}{i}", i))
                    if i % batch == batch - 1:
                        await trio.lowlevel.checkpoint()
                end = time.monotonic()
                return json_response({"seconds": end - start, "end": end})

            emu.mount("/_bench/create", create)
            print(f"url={emu.url}", flush=True)
            await trio.sleep_forever()

    trio.run(main)


class Emulator:
    """A ``--serve-emulator`` child process; ``create`` triggers Python-side creation."""

    def __init__(self, objects: int) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="kt-bench-reconcile-")
        self.kubeconfig = str(Path(self._dir.name) / "kubeconfig")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-emulator", self.kubeconfig, str(2 * objects + 99)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("url="):
            raise RuntimeError(f"emulator did not start: {line!r}")
        self.url = line[4:]
        self.port = int(self.url.rsplit(":", 1)[1])

    def create(self, n: int, prefix: str = PREFIX, batch: int = 0) -> tuple[float, float]:
        """Create ``prefix0`` … in the emulator, yielding to its event loop every ``batch``
        objects (0: never, one burst). Returns the emulator's creation seconds and the
        ``time.monotonic()`` at which it finished (one system-wide clock on Linux)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        conn.request("POST", f"/_bench/create?n={n}&prefix={prefix}&batch={batch}")
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        if resp.status != 200:
            raise RuntimeError(f"create failed: {resp.status} {body[:200]!r}")
        data = json.loads(body)
        return float(data["seconds"]), float(data["end"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self._dir.cleanup()

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# --------------------------------------------------------------------------- kubetrio


class Counting:
    """No-op reconciler: counts calls and distinct names; ``done`` once ``n`` distinct seen.

    Names are kept as ``str``, as the kopf handler keeps them: a set of 100 000 ``ObjectKey``s
    (a tuple subclass the garbage collector tracks) would make kubetrio's side pay for the
    benchmark's own bookkeeping in every full collection, which kopf's side does not.
    """

    def __init__(self, n: int) -> None:
        import trio

        from kubetrio.runtime.controller.controller import Result

        self.n = n
        self.calls = 0
        self.seen: set[str] = set()
        self.first = trio.Event()
        self.done = trio.Event()
        self.finished_at = 0.0
        self.first_at = 0.0  # time.monotonic() when the first key was reconciled
        self.cpu_first = 0.0  # process CPU seconds when the first (probe) key was reconciled
        self.cpu_done = 0.0  # ... and when the n-th distinct name was
        self._result = Result()
        self._prefix = PREFIX

    async def reconcile(self, key: Any) -> Any:
        if not self.calls:
            self.first_at = time.monotonic()
            self.cpu_first = time.process_time()
            self.first.set()
        self.calls += 1
        name = key.name
        if name not in self.seen and name.startswith(self._prefix):
            self.seen.add(name)
            if len(self.seen) == self.n:
                self.finished_at = time.monotonic()
                self.cpu_done = time.process_time()
                self.done.set()
        return self._result


async def inprocess_round(n: int, workers: int) -> float:
    import trio
    from prometheus_client import CollectorRegistry

    from kubetrio.runtime.controller.controller import Controller
    from kubetrio.runtime.controller.queue import ObjectKey

    keys = [ObjectKey(NS, f"{PREFIX}{i}") for i in range(n)]
    counter = Counting(n)
    controller: Controller[ObjectKey] = Controller(
        "bench", counter, workers=workers, registry=CollectorRegistry()
    )
    async with trio.open_nursery() as nursery:
        start = time.monotonic()
        add = controller.queue.add
        for key in keys:
            add(key)
        nursery.start_soon(controller.run)
        with trio.fail_after(TIMEOUT):
            await counter.done.wait()
        elapsed = counter.finished_at - start
        controller.stop()
    assert counter.calls == n, (counter.calls, n)
    return n / elapsed


async def kubetrio_e2e(emu: Emulator, n: int, workers: int, mode: str) -> dict[str, float]:
    import trio

    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.client.typed import Client
    from kubetrio.runtime.manager.manager import Manager

    counter = Counting(n)
    out: dict[str, float] = {}
    if mode == "initial":
        out["create_per_s"] = n / emu.create(n)[0]
    # Default client (20 qps / burst 30): a no-op reconcile makes no requests.
    client = Client.from_kubeconfig(emu.kubeconfig)
    manager = Manager(
        client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    manager.controller("bench").for_(ConfigMap, namespace=NS).workers(workers).complete(counter)
    async with trio.open_nursery() as nursery:
        start = time.monotonic()
        cpu_start = time.process_time()
        await nursery.start(manager.run)  # returns once the informer has listed
        if mode != "initial":
            # A probe object seen by the reconciler: the watch is established (as for kopf).
            await trio.to_thread.run_sync(emu.create, 1, "probe-")
            with trio.fail_after(TIMEOUT):
                await counter.first.wait()
            cpu_start = counter.cpu_first
            start = time.monotonic()
            seconds, end = await trio.to_thread.run_sync(
                emu.create, n, PREFIX, BATCH if mode == "streamed" else 0
            )
            out["create_per_s"] = n / seconds
            if mode == "burst":
                start = end
        with trio.fail_after(TIMEOUT):
            await counter.done.wait()
        manager.stop()
    out["per_s"] = n / (counter.finished_at - start)
    out["cpu_us"] = (counter.cpu_done - cpu_start) / n * 1e6
    out["calls"] = counter.calls - (mode != "initial")
    return out


# --------------------------------------------------------------------------- kopf


def kopf_child(n: int) -> None:
    """The operator. Prints ``STARTUP t``, ``SEEN name t`` for non-bench objects, ``DONE t``."""
    import logging

    import kopf

    seen: set[str] = set()

    @kopf.on.startup()
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True
        print(f"STARTUP {time.monotonic()} {time.process_time()}", flush=True)

    @kopf.on.event("v1", "configmaps")
    async def on_event(name: str, **_: Any) -> None:
        if not name.startswith(PREFIX):
            print(f"SEEN {name} {time.monotonic()} {time.process_time()}", flush=True)
            return
        if name not in seen:
            seen.add(name)
            if len(seen) == n:
                print(f"DONE {time.monotonic()} {time.process_time()}", flush=True)

    kopf.configure(verbose=False, quiet=True)
    logging.getLogger().setLevel(logging.WARNING)
    with consumer_gc():
        kopf.run(standalone=True, namespaces=[NS])


class Lines:
    """A child's stdout lines, read in a thread so waits can time out."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._q: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for line in stdout:
                self._q.put(line.strip())
            self._q.put("EOF")

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, word: str) -> list[str]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            line = self._q.get(timeout=max(0.0, deadline - time.monotonic()))
            if line == "EOF":
                raise RuntimeError(f"kopf exited before {word}")
            parts = line.split()
            if parts and parts[0] == word:
                return parts


def kopf_run(emu: Emulator, n: int, mode: str) -> dict[str, float]:
    out: dict[str, float] = {}
    if mode == "initial":
        out["create_per_s"] = n / emu.create(n)[0]
    env = dict(os.environ, KUBECONFIG=emu.kubeconfig)
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--kopf-child",
            str(n),
            "--gc",
            gc_mode,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        lines = Lines(proc)
        startup = lines.wait_for("STARTUP")
        start, cpu_start = float(startup[1]), float(startup[2])
        if mode != "initial":
            # kopf has no "watch established" signal: a probe object it must see first.
            emu.create(1, prefix="probe-")
            cpu_start = float(lines.wait_for("SEEN")[3])
            start = time.monotonic()
            seconds, end = emu.create(n, PREFIX, BATCH if mode == "streamed" else 0)
            out["create_per_s"] = n / seconds
            if mode == "burst":
                start = end
        done = lines.wait_for("DONE")
        out["per_s"] = n / (float(done[1]) - start)
        out["cpu_us"] = (float(done[2]) - cpu_start) / n * 1e6
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return out


# --------------------------------------------------------------------------- both servers


class Stamping(Counting):
    """``Counting``, and when each name was first reconciled (``time.monotonic()``); CPU is
    counted from the first written object's reconcile (the writer process's start-up before
    it is no work of the consumer's)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.stamps: dict[str, float] = {}
        self.cpu_written = 0.0

    async def reconcile(self, key: Any) -> Any:
        name = key.name
        if name not in self.stamps:
            self.stamps[name] = time.monotonic()
            if not self.cpu_written and name.startswith(PREFIX):
                self.cpu_written = time.process_time()
        return await super().reconcile(key)


def write_child(kubeconfig: str, namespace: str, n: int) -> None:
    """The writer: N ConfigMaps POSTed one after the other (each waits for the one before it
    to be answered, as a client writing what it computed would); prints, as JSON, the
    ``time.monotonic()`` at which each request was sent and its answer arrived."""
    import trio

    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.client.typed import Client

    async def main() -> None:
        client = Client.from_kubeconfig(kubeconfig, qps=0)
        written: list[tuple[float, float]] = []
        for i in range(n):
            body = configmap(f"{PREFIX}{i}", i)
            body["metadata"]["namespace"] = namespace
            sent = time.monotonic()
            await client.create(ConfigMap, body)
            written.append((sent, time.monotonic()))
        print(json.dumps(written), flush=True)

    trio.run(main)


async def written_to_reconciled(kubeconfig: str, namespace: str, n: int, workers: int) -> Any:
    """One round of the cross-server scenario on the server ``kubeconfig`` names (see the
    docstring): per-object latency from written to reconciled, and CPU per event."""
    import trio

    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.client.typed import Client
    from kubetrio.runtime.manager.manager import Manager

    counter = Stamping(n)
    client = Client.from_kubeconfig(kubeconfig)
    await ensure_namespace(kubeconfig, namespace)
    manager = Manager(
        client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    manager.controller("bench").for_(ConfigMap, namespace=namespace).workers(workers).complete(
        counter
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        probe = {"metadata": {"name": "probe-0", "namespace": namespace}}
        await client.create(ConfigMap, probe)  # reconciled: the watch is open
        with trio.fail_after(TIMEOUT):
            await counter.first.wait()
        command = [sys.executable, __file__, "--write-child", kubeconfig, namespace, str(n)]
        with trio.fail_after(TIMEOUT):
            writer = await trio.run_process(command, capture_stdout=True)
            await counter.done.wait()
        manager.stop()
    written: list[tuple[float, float]] = json.loads(writer.stdout)
    reconciled = [counter.stamps[f"{PREFIX}{i}"] for i in range(n)]
    from_sent = sorted(r - sent for r, (sent, _) in zip(reconciled, written, strict=True))
    from_answer = sorted(r - answer for r, (_, answer) in zip(reconciled, written, strict=True))
    return {
        "written_per_s": n / (written[-1][1] - written[0][0]),
        "cpu_us": (counter.cpu_done - counter.cpu_written) / (n - 1) * 1e6,
        "latency_p50_ms": statistics.median(from_sent) * 1e3,
        "latency_p99_ms": from_sent[min(n - 1, int(n * 0.99))] * 1e3,
        "after_answer_p50_ms": statistics.median(from_answer) * 1e3,
    }


def both_servers(n: int, workers: int, repeat: int) -> dict[str, dict[str, float]]:
    """The cross-server scenario, rounds interleaved: a fresh emulator each round, one real
    control plane for all (a namespace of its own each round); medians per server."""
    import trio
    from realserver import real_server

    rounds: dict[str, list[dict[str, float]]] = {}
    with real_server() as real:
        for round_ in range(repeat):
            namespace = f"written-{round_}"
            with Emulator(n) as emu, consumer_gc():
                f = trio.run(written_to_reconciled, emu.kubeconfig, namespace, n, workers)
            rounds.setdefault("emulator", []).append(f)
            if real is not None:
                with consumer_gc():
                    f = trio.run(written_to_reconciled, str(real), namespace, n, workers)
                clear_configmaps(str(real), [namespace])  # a shared server keeps them
                rounds.setdefault("real", []).append(f)
            for server, fs in rounds.items():
                f = fs[-1]
                print(
                    f"[{round_ + 1}/{repeat}] written->reconciled, {server}: "
                    f"{f['cpu_us']:.1f} CPU µs per event, latency p50 "
                    f"{f['latency_p50_ms']:.2f} ms p99 {f['latency_p99_ms']:.2f} ms "
                    f"(written {f['written_per_s']:,.0f}/s)",
                    flush=True,
                )
    return {
        server: {k: statistics.median(f[k] for f in fs) for k in fs[0]}
        for server, fs in rounds.items()
    }


# --------------------------------------------------------------------------- controller-runtime

CR_FIGURES = {
    "cpu_us": "CPU µs per watched event",
    "initial_first_s": "initial: start -> first reconcile (s)",
    "initial_all_s": "initial: start -> all reconciled (s)",
    "initial_cpu_us": "initial: CPU µs per object",
}


async def kubetrio_real(
    kubeconfig: str, crbench: Path, namespace: str, n: int, workers: int, initial: bool
) -> dict[str, float]:
    """kubetrio's side of (5): the same ``Manager`` as in (2) on the real server. Watched
    events: synced on an empty namespace, a probe reconciled, then ``crbench create`` writes N
    ConfigMaps; CPU from the probe's reconcile to the N-th name's. Initial: the N exist; the
    clock and CPU run from just before ``Manager.run`` (what crbench's STARTUP marks)."""
    import trio
    from crbaseline import create

    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.client.typed import Client
    from kubetrio.runtime.manager.manager import Manager

    counter = Counting(n)
    client = Client.from_kubeconfig(kubeconfig)
    manager = Manager(
        client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    manager.controller("bench").for_(ConfigMap, namespace=namespace).workers(workers).complete(
        counter
    )
    async with trio.open_nursery() as nursery:
        start, cpu_start = time.monotonic(), time.process_time()
        await nursery.start(manager.run)
        if not initial:
            await trio.to_thread.run_sync(create, crbench, kubeconfig, namespace, 1, "probe-")
            with trio.fail_after(TIMEOUT):
                await counter.first.wait()
            cpu_start = counter.cpu_first
            await trio.to_thread.run_sync(create, crbench, kubeconfig, namespace, n, PREFIX)
        with trio.fail_after(TIMEOUT):
            await counter.done.wait()
        manager.stop()
    if not initial:
        return {"cpu_us": (counter.cpu_done - cpu_start) / n * 1e6}
    return {
        "initial_first_s": counter.first_at - start,
        "initial_all_s": counter.finished_at - start,
        "initial_cpu_us": (counter.cpu_done - cpu_start) / n * 1e6,
    }


def crbench_real(
    kubeconfig: str, crbench: Path, namespace: str, n: int, workers: int, initial: bool
) -> dict[str, float]:
    """controller-runtime's side of (5): ``crbench reconcile``, the same steps and clocks."""
    from crbaseline import Process, create

    with Process(
        crbench,
        "reconcile",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--n",
        str(n),
        "--prefix",
        PREFIX,
        "--workers",
        str(workers),
    ) as run:
        start, cpu_start = map(float, run.wait_for("STARTUP"))
        if not initial:
            create(crbench, kubeconfig, namespace, 1, "probe-")
            cpu_start = float(run.wait_for("SEEN")[2])
            create(crbench, kubeconfig, namespace, n, PREFIX)
            return {"cpu_us": (float(run.wait_for("DONE")[1]) - cpu_start) / n * 1e6}
        first = float(run.wait_for("FIRST")[0])
        done, cpu_done = map(float, run.wait_for("DONE")[:2])
    return {
        "initial_first_s": first - start,
        "initial_all_s": done - start,
        "initial_cpu_us": (cpu_done - cpu_start) / n * 1e6,
    }


def clear_configmaps(kubeconfig: str, namespaces: list[str]) -> None:
    """The rounds' ConfigMaps deleted (the real server keeps what a benchmark leaves)."""
    import trio

    from kubetrio.runtime.client.typed import Client

    async def main() -> None:
        client = Client.from_kubeconfig(kubeconfig, qps=0)
        for namespace in namespaces:
            await client.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps")

    trio.run(main)


def controller_runtime(n: int, workers: int, repeat: int) -> dict[str, dict[str, float]] | None:
    """(5), rounds alternating which side goes first: per round a namespace for each side's
    watched events and one whose N existing objects both sync in turn; medians per side."""
    import trio
    from crbaseline import binary, create
    from realserver import real_server

    crbench = binary()
    if crbench is None:
        return None
    rounds: dict[str, list[dict[str, float]]] = {"kt": [], "cr": []}
    with real_server() as real:
        if real is None:
            return None
        kubeconfig = str(real)
        for round_ in range(repeat):
            names = [f"cr-{round_}-kt", f"cr-{round_}-cr", f"cr-{round_}-initial"]
            for namespace in names:
                trio.run(ensure_namespace, kubeconfig, namespace)
            sides = ("kt", "cr") if round_ % 2 == 0 else ("cr", "kt")
            figures: dict[str, dict[str, float]] = {"kt": {}, "cr": {}}
            for side in sides:
                namespace = names[0] if side == "kt" else names[1]
                figures[side].update(real_side(side, kubeconfig, crbench, namespace, n, workers))
            create(crbench, kubeconfig, names[2], n, PREFIX)
            for side in sides:
                figures[side].update(
                    real_side(side, kubeconfig, crbench, names[2], n, workers, True)
                )
            clear_configmaps(kubeconfig, names)
            for side in ("kt", "cr"):
                rounds[side].append(figures[side])
                f = figures[side]
                print(
                    f"[{round_ + 1}/{repeat}] real server, {side}: {f['cpu_us']:.1f} CPU µs per "
                    f"watched event; initial: first {f['initial_first_s']:.3f} s, all "
                    f"{f['initial_all_s']:.3f} s, {f['initial_cpu_us']:.1f} CPU µs per object",
                    flush=True,
                )
    return {
        side: {k: statistics.median(f[k] for f in fs) for k in fs[0]} for side, fs in rounds.items()
    }


def real_side(
    side: str,
    kubeconfig: str,
    crbench: Path,
    namespace: str,
    n: int,
    workers: int,
    initial: bool = False,
) -> dict[str, float]:
    """One side's figures for one scenario of (5)."""
    import trio

    if side == "cr":
        return crbench_real(kubeconfig, crbench, namespace, n, workers, initial)
    with consumer_gc():
        return trio.run(kubetrio_real, kubeconfig, crbench, namespace, n, workers, initial)


async def ensure_namespace(kubeconfig: str, namespace: str) -> None:
    from kubetrio.api.core import Namespace
    from kubetrio.runtime.client.errors import ApiError
    from kubetrio.runtime.client.typed import Client

    client = Client.from_kubeconfig(kubeconfig)
    try:
        await client.create(Namespace, {"metadata": {"name": namespace}})
    except ApiError as error:
        if error.status != 409:
            raise


# --------------------------------------------------------------------------- main


def sized(n: int, per_s: float, min_window: float) -> int:
    """N raised (in thousands) so that kubetrio at ``per_s`` works at least ``min_window``."""
    wanted = per_s * min_window
    return n if wanted <= n else -(-int(wanted * 1.1) // 1000) * 1000


def spread(values: list[float]) -> float:
    """(max - min) / median: how far the rounds of one figure disagree."""
    return (max(values) - min(values)) / statistics.median(values)


def report_cr(
    cr: dict[str, dict[str, float]] | None, args: argparse.Namespace, result: dict[str, Any]
) -> None:
    """(5)'s table, kt/cr per figure, into ``result`` as ``real_{kt,cr}_*`` and
    ``real_kt_over_cr_*``."""
    if cr is None:
        return
    result["cr_objects"] = args.cr_objects
    print(
        f"controller-runtime on the real server, {args.cr_objects} objects, medians of "
        f"{args.repeat}:"
    )
    print(f"  {'':40}{'kubetrio':>10}{'c-runtime':>10}{'kt/cr':>8}")
    for figure, label in CR_FIGURES.items():
        kt, cr_ = cr["kt"][figure], cr["cr"][figure]
        result[f"real_kt_{figure}"] = round(kt, 4)
        result[f"real_cr_{figure}"] = round(cr_, 4)
        result[f"real_kt_over_cr_{figure}"] = round(kt / cr_, 3)
        print(f"  {label:<40}{kt:10.3f}{cr_:10.3f}{kt / cr_:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000, help="N (default 10 000)")
    parser.add_argument("--workers", type=int, default=WORKERS, help="reconcile workers")
    parser.add_argument("--rounds", type=int, default=5, help="in-process rounds (median)")
    parser.add_argument("--repeat", type=int, default=3, help="e2e/kopf rounds (median)")
    parser.add_argument("--skip-kopf", action="store_true", help="no kopf baseline")
    parser.add_argument(
        "--min-window",
        type=float,
        default=2.0,
        help="raise N until one round of kubetrio's work lasts this long (default 2 s)",
    )
    parser.add_argument(
        "--gc",
        choices=("tuned", "default"),
        default="tuned",
        help="collector settings of both consumers during a round (default: tuned, see above)",
    )
    parser.add_argument(
        "--cross-objects",
        type=int,
        default=2000,
        help="objects written in the written->reconciled scenario on both servers (0: none)",
    )
    parser.add_argument(
        "--cr-objects",
        type=int,
        default=10_000,
        help="objects of the controller-runtime comparison on the real server (0: none)",
    )
    parser.add_argument(
        "--cr-only", action="store_true", help="only the controller-runtime comparison (5)"
    )
    parser.add_argument("--serve-emulator", nargs=2, metavar=("KUBECONFIG", "WINDOW"))
    parser.add_argument("--write-child", nargs=3, metavar=("KUBECONFIG", "NAMESPACE", "N"))
    parser.add_argument("--kopf-child", type=int, metavar="N")
    args = parser.parse_args()
    global gc_mode
    gc_mode = args.gc
    if args.serve_emulator:
        serve_emulator_child(args.serve_emulator[0], int(args.serve_emulator[1]))
        return
    if args.kopf_child:
        kopf_child(args.kopf_child)
        return
    if args.write_child:
        write_child(args.write_child[0], args.write_child[1], int(args.write_child[2]))
        return

    import trio

    from kubetrio.runtime.util.log import configure_logging

    configure_logging(level="warning")
    if args.cross_objects or args.cr_objects:
        from realserver import SHARED, available

        if not os.environ.get(SHARED):
            available()  # under CI, fail before the work
    if args.cr_objects:
        from crbaseline import binary

        binary()  # likewise
    n, workers = args.objects, args.workers
    if args.cr_only:
        result: dict[str, Any] = {}
        report_cr(controller_runtime(args.cr_objects, workers, args.repeat), args, result)
        print("RESULT " + json.dumps(result), flush=True)
        return
    print(f"objects={n} workers={workers} cores={os.cpu_count()} gc={args.gc}", flush=True)

    async def inprocess() -> tuple[float, float, int]:
        await inprocess_round(min(n, 1000), workers)  # warm-up
        size = sized(n, await inprocess_round(n, workers), args.min_window)
        rates = [await inprocess_round(size, workers) for _ in range(args.rounds)]
        return statistics.median(rates), spread(rates), size

    inproc, inproc_spread, inproc_n = trio.run(inprocess)
    print(
        f"inprocess: {inproc:,.0f} reconciles/s (median of {args.rounds} rounds of "
        f"{inproc_n} objects, spread {inproc_spread:.1%})",
        flush=True,
    )
    if args.min_window > 0:
        with Emulator(n) as emu, consumer_gc():
            calibration = trio.run(kubetrio_e2e, emu, n, workers, "burst")
        # From CPU, not wall time: the same code then picks the same N whatever the load.
        n = sized(n, 1e6 / calibration["cpu_us"], args.min_window)
    print(f"e2e and kopf: {n} objects (a {args.min_window:g} s window of kubetrio's)", flush=True)

    runs: dict[str, list[dict[str, float]]] = {}
    for round_ in range(args.repeat):
        for mode in MODES:
            name = "e2e" + SUFFIX[mode]
            with Emulator(n) as emu, consumer_gc():
                f = trio.run(kubetrio_e2e, emu, n, workers, mode)
            runs.setdefault(name, []).append(f)
            print(
                f"[{round_ + 1}/{args.repeat}] {name}: {f['per_s']:,.0f} reconciles/s, "
                f"{f['cpu_us']:.1f} CPU µs each ({f['calls']:.0f} reconciles; emulator "
                f"created {f['create_per_s']:,.0f}/s)",
                flush=True,
            )
        for mode in () if args.skip_kopf else MODES:
            name = "kopf" + SUFFIX[mode]
            with Emulator(n) as emu:
                f = kopf_run(emu, n, mode)
            runs.setdefault(name, []).append(f)
            print(
                f"[{round_ + 1}/{args.repeat}] {name}: {f['per_s']:,.0f} handled/s, "
                f"{f['cpu_us']:.1f} CPU µs each (emulator created {f['create_per_s']:,.0f}/s)",
                flush=True,
            )
    figures = {
        name: {
            "per_s": statistics.median(f["per_s"] for f in fs),
            "spread": spread([f["per_s"] for f in fs]),
            "cpu_us": statistics.median(f["cpu_us"] for f in fs),
            "cpu_spread": spread([f["cpu_us"] for f in fs]),
        }
        for name, fs in runs.items()
    }
    for name, f in figures.items():
        print(
            f"{name}: median {f['per_s']:,.0f}/s over {args.repeat} rounds "
            f"(spread {f['spread']:.1%}); {f['cpu_us']:.1f} CPU µs per object "
            f"(spread {f['cpu_spread']:.1%})",
            flush=True,
        )

    e2e = figures["e2e"]["per_s"]
    kopf = figures["kopf"]["per_s"] if "kopf" in figures else None
    ratio = e2e / kopf if kopf else None
    result = {
        "objects": n,
        "inprocess_objects": inproc_n,
        "inprocess_per_s": round(inproc),
        "inprocess_spread": round(inproc_spread, 3),
        "e2e_spread": round(figures["e2e"]["spread"], 3),
        "e2e_per_s": round(e2e),
        "kopf_per_s": round(kopf) if kopf else None,
        "e2e_over_kopf": round(ratio, 1) if ratio else None,
        "gc": args.gc,
        "e2e_cpu_us": round(figures["e2e"]["cpu_us"], 2),
        "e2e_cpu_spread": round(figures["e2e"]["cpu_spread"], 3),
    }
    if kopf:
        result["kopf_cpu_us"] = round(figures["kopf"]["cpu_us"], 2)
        result["kopf_cpu_over_e2e"] = round(figures["kopf"]["cpu_us"] / figures["e2e"]["cpu_us"], 1)
    for mode in ("streamed", "initial"):
        ours = figures["e2e" + SUFFIX[mode]]["per_s"]
        result[f"e2e{SUFFIX[mode]}_per_s"] = round(ours)
        theirs = figures.get("kopf" + SUFFIX[mode])
        if theirs is not None:
            result[f"kopf{SUFFIX[mode]}_per_s"] = round(theirs["per_s"])
            result[f"e2e{SUFFIX[mode]}_over_kopf"] = round(ours / theirs["per_s"], 1)
            cpu = theirs["cpu_us"] / figures["e2e" + SUFFIX[mode]]["cpu_us"]
            result[f"kopf{SUFFIX[mode]}_cpu_over_e2e"] = round(cpu, 1)
    if args.cross_objects:
        started = time.monotonic()
        cross = both_servers(args.cross_objects, workers, args.repeat)
        result["cross_objects"] = args.cross_objects
        print(
            f"written->reconciled, {args.cross_objects} objects, medians "
            f"({time.monotonic() - started:.0f} s):"
        )
        print(f"  {'':24}{'emulator':>12}{'real':>12}{'real/emulator':>15}")
        for figure, label in CROSS_FIGURES.items():
            row = {server: cross[server][figure] for server in cross}
            for server, value in row.items():
                result[f"{server}_{figure}"] = round(value, 3)
            over = row["real"] / row["emulator"] if "real" in row else None
            if over is not None and figure in ("cpu_us", "latency_p50_ms", "latency_p99_ms"):
                result[f"real_over_emulator_{figure}"] = round(over, 3)
            real = f"{row['real']:12.2f}" if "real" in row else f"{'-':>12}"
            shown = f"{over:15.3f}" if over is not None else ""
            print(f"  {label:<24}{row['emulator']:12.2f}{real}{shown}")
    if args.cr_objects:
        report_cr(controller_runtime(args.cr_objects, workers, args.repeat), args, result)
    verdict = "pass" if inproc >= INPROCESS_TARGET else "MISS"
    print(f"target inprocess >= {INPROCESS_TARGET:,.0f}/s: {verdict}")
    if ratio is not None:
        verdict = "pass" if ratio >= E2E_OVER_KOPF_TARGET else "MISS"
        print(f"target e2e >= {E2E_OVER_KOPF_TARGET:g}x kopf: {verdict} ({ratio:.1f}x)")
        print(f"CPU per object kopf / e2e: {result['kopf_cpu_over_e2e']:.1f}x")
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
