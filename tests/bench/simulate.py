"""The simulated world's own scale on both servers: time to N Ready nodes and 10·N Running pods.

Why: ``kubetrio simulate`` is meant to stand in for KWOK beside any API server, and KWOK's
published bar is 5 000 nodes Ready and 10 000 pods Running within a minute each. What limits
that here is either the API server or the simulation's own CPU (its mirror kept by list+watch,
its writers, its level-triggered passes), and only a run against a real kube-apiserver says
which: against the emulator alone the two share the blame.

The same work on each server, each started fresh for each size:

- **emulator**: ``kubetrio emulator`` in a child process (its CPU is not the simulation's);
- **real**: etcd + kube-apiserver + kube-controller-manager running only the controllers a
  cluster has that the simulation does not replace (garbagecollector, namespace,
  serviceaccount), from ``KUBEBUILDER_ASSETS`` (``ControlPlane``).

The simulation runs in a child process of its own (``--serve-simulation``: exactly what
``kubetrio simulate --fast`` runs, every behaviour on, no delays), which answers each line on
its stdin with its CPU seconds (``getrusage``), the part of them its garbage collector took
(``sim_gc_share``), the requests its writers sent (``ApiObjects.writes``) and its RSS. This
process, a client like any other, then:

1. POSTs N Nodes (as ``kubectl create`` would: no status; 32 at a time) and waits, on a watch,
   until every one is Ready (the simulated kubelet posts that): ``nodes_ready_s``;
2. makes 10·N pods and waits, on a watch, until all are Running: ``pods_running_s``. The
   ``--shape`` says how: ``deployment`` (the default) POSTs one Deployment of 10·N replicas
   (the simulated deployment and replicaset controllers make the pods, its scheduler binds
   them, its kubelet starts them); ``bound`` POSTs the pods themselves with ``spec.nodeName``
   set, 32 at a time, as KWOK's benchmark does (only the simulated kubelet acts: KWOK's bar
   measures a kubelet, not a scheduler and a controller manager).

The simulation's CPU over each phase divided by its count gives ``sim_cpu_ms_per_node`` and
``sim_cpu_ms_per_pod``; ``writes_per_node`` / ``writes_per_pod`` likewise. The server's CPU
(the emulator child's, or etcd + kube-apiserver + controller manager's, from /proc) is reported
beside it, and per process (``cpu_ms_per_pod_by_process``: the simulation, each server
process, this benchmark's own watches and POSTs), with the seconds each process was runnable
but waited for a core (``waited_for_cpu_s_*``, from ``/proc/PID/schedstat``): on a shared
machine that is the part of a phase's wall time other work took, so a slow phase is laid at
the right door. ``*_cpu_floor_s`` is what a phase would take if nothing else ran: the CPU all
those processes spent over the machine's cores, or the busiest Python process's (one thread),
whichever is longer. The figures that travel between machines are the same-run ratios real /
emulator (``real_over_emulator_*``) and the CPU per object; the absolute seconds are for the
note (say how busy the machine was).

``python tests/bench/simulate.py --nodes 500 1000`` (default 500); ``--quick``: N = 20 (200
pods), well under half a minute per server; ``--servers emulator`` runs one half;
``--pods-per-node 2 --nodes 5000`` is KWOK's bar (0: nodes only; ``--shape bound`` its kind
of pods). Without the real server's binaries its half is left out with a note (not under CI).
Last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/simulate.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

import argparse
import contextlib
import functools
import gc
import json
import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import trio
from realserver import available

from kubetrio.api.core import Node, Pod
from kubetrio.runtime.client.typed import Client, WatchEvent
from kubetrio.testing.controlplane import ControlPlane

PODS_PER_NODE = 10
SHAPES = ("deployment", "bound")
LABELS = {"app": "simbench"}
NAMESPACE = "default"
CONCURRENT_POSTS = 32
PHASE_TIMEOUT = 900.0
# What a bare cluster has that the simulation does not replace.
REAL_CONTROLLERS = ("garbagecollector", "namespace", "serviceaccount")
TICK = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
# The real control plane's processes, which spread over every core.
GO_PROCESSES = frozenset({"etcd", "kube-apiserver", "kube-controller-manager"})


# --------------------------------------------------------------------------- the simulation


def serve_simulation(kubeconfig: str) -> None:
    """The child: ``kubetrio simulate --fast`` on ``kubeconfig`` (its collector tuned as
    there), answering each stdin line with its figures so far; stops at end of input."""
    from kubetrio.cmd.simulate import behaviours, simulation
    from kubetrio.runtime.manager.gctuning import GcTuning
    from kubetrio.sim.world import simulated_world

    options = simulation(argparse.Namespace(fast=True, controllers=behaviours("*")))
    client = Client.from_kubeconfig(kubeconfig, None, qps=0, max_concurrency=64)
    collector = {"s": 0.0, "since": 0.0}

    def timed(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            collector["since"] = time.process_time()
        else:
            collector["s"] += time.process_time() - collector["since"]

    gc.callbacks.append(timed)

    async def main() -> None:
        tuning = GcTuning("tuned")
        tuning.start()
        async with simulated_world(client, simulate=options) as world:
            tuning.synced()
            print("ready", flush=True)
            stdin = trio.lowlevel.FdStream(os.dup(0))
            buffer = b""
            while chunk := await stdin.receive_some():
                buffer += chunk
                while b"\n" in buffer:
                    _, buffer = buffer.split(b"\n", 1)
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    figures = {
                        "cpu_s": usage.ru_utime + usage.ru_stime,
                        "gc_s": collector["s"],
                        "writes": world.objects.writes,
                        "refused": world.objects.refused,
                        "reads": world.objects.reads,
                        "rss_mib": _rss_kib(os.getpid()) / 1024,
                        "peak_rss_mib": usage.ru_maxrss / 1024,
                    }
                    print(json.dumps(figures), flush=True)

    trio.run(main)


class Simulation:
    """The ``--serve-simulation`` child on one server."""

    def __init__(self, kubeconfig: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-simulation", str(kubeconfig)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._line()
        if line != "ready":
            self.close()
            raise RuntimeError(f"simulation did not start: {line!r}")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def figures(self) -> dict[str, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return dict(json.loads(self._line()))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --------------------------------------------------------------------------- the servers


def _rss_kib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, from /proc (its getrusage is not ours to call)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def waited_seconds(pid: int) -> float:
    """Time a live process's threads were runnable but waiting for a core (each thread's
    ``schedstat``): on a shared machine, the part of a phase's wall time other work took."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


def sample(pids: dict[str, int]) -> dict[str, tuple[float, float]]:
    """Each process's CPU and wait seconds so far."""
    return {name: (cpu_seconds(pid), waited_seconds(pid)) for name, pid in pids.items()}


@contextlib.contextmanager
def emulator() -> Iterator[tuple[Path, dict[str, int]]]:
    """``kubetrio emulator`` in a child: its kubeconfig and pid."""
    with tempfile.TemporaryDirectory(prefix="kt-bench-simulate-") as work:
        kubeconfig = Path(work) / "kubeconfig"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubetrio.cmd.main",
                "emulator",
                "--port",
                "0",
                "--kubeconfig-out",
                str(kubeconfig),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("kubeconfig="):
                    break
            else:
                raise RuntimeError(f"emulator exited with {proc.wait()} before it served")
            yield Path(line.strip().removeprefix("kubeconfig=")), {"emulator": proc.pid}
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:  # a loaded machine: its 15 000 objects to free
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def real() -> Iterator[tuple[Path, dict[str, int]]]:
    with ControlPlane(controllers=REAL_CONTROLLERS) as plane:
        yield plane.kubeconfig_path, {p.name: p.popen.pid for p in plane._processes}


SERVERS: dict[str, Callable[[], contextlib.AbstractContextManager[tuple[Path, dict[str, int]]]]] = {
    "emulator": emulator,
    "real": real,
}


# --------------------------------------------------------------------------- the work


def node(name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    return {"metadata": {"name": name, "labels": labels}}


def bound_pod(i: int, node_name: str) -> dict[str, Any]:
    """KWOK's benchmark pod: posted with ``spec.nodeName`` set, so only a kubelet acts on it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"simbench-{i}", "namespace": NAMESPACE, "labels": LABELS},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": node_name},
    }


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "simbench"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "simbench", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


class Count:
    """Objects that meet ``done``, kept by a watch; ``reached`` fires at ``target``."""

    def __init__(self, done: Callable[[Any], bool]) -> None:
        self.done = done
        self.met: set[str] = set()
        self.target = -1
        self.reached = trio.Event()

    def expect(self, target: int) -> None:
        self.target = target
        self._check()

    def see(self, event: WatchEvent[Any]) -> None:
        name = event.obj.metadata.name
        if event.type != "DELETED" and self.done(event.obj):
            self.met.add(name)
        else:
            self.met.discard(name)
        self._check()

    def _check(self) -> None:
        if self.target >= 0 and len(self.met) >= self.target:
            self.reached.set()


async def follow(
    client: Client, kind: type[Any], namespace: str | None, count: Count, *, task_status: Any
) -> None:
    """List, then watch for good (relisting on 410), feeding ``count``."""
    started = False
    while True:
        listed = await client.list(kind, namespace=namespace)
        for obj in listed.items:
            count.see(WatchEvent("ADDED", obj))
        version = listed.metadata.resource_version
        if not started:
            task_status.started()
            started = True
        while True:
            send, receive = trio.open_memory_channel[list[WatchEvent[Any]]](1000)
            gone = False
            async with trio.open_nursery() as nursery:
                watch = functools.partial(
                    client.watch, kind, send, namespace=namespace, resource_version=version
                )
                nursery.start_soon(watch)
                async for batch in receive:
                    for event in batch:
                        if event.type == "ERROR":
                            gone = event.error is not None and event.error.status == 410
                            continue
                        version = event.resource_version or version
                        if event.type != "BOOKMARK":
                            count.see(event)
            if gone:
                break


def node_ready(obj: Node) -> bool:
    ready = obj.condition("Ready")
    return ready is not None and ready.status == "True"


def pod_running(obj: Pod) -> bool:
    return obj.status.phase == "Running"


async def measure(
    kubeconfig: Path, server_pids: dict[str, int], n: int, per_node: int, shape: str
) -> dict[str, Any]:
    pods = per_node * n
    sim = Simulation(kubeconfig)
    pids = {"simulation": sim.proc.pid, **server_pids, "bench": os.getpid()}
    client = Client.from_kubeconfig(str(kubeconfig), None, qps=0, max_concurrency=CONCURRENT_POSTS)
    try:
        nodes_ready, pods_running = Count(node_ready), Count(pod_running)
        async with trio.open_nursery() as nursery:
            await nursery.start(follow, client, Node, None, nodes_ready)
            await nursery.start(follow, client, Pod, NAMESPACE, pods_running)
            s0, c0, w0 = sim.figures(), sample(pids), time.monotonic()

            async def post(i: int, limit: trio.Semaphore) -> None:
                async with limit:
                    await client.create(Node, node(f"node-{i}"))

            async with trio.open_nursery() as posting:
                limit = trio.Semaphore(CONCURRENT_POSTS)
                for i in range(n):
                    posting.start_soon(post, i, limit)
            nodes_ready.expect(n)
            with trio.fail_after(PHASE_TIMEOUT):
                await nodes_ready.reached.wait()
            s1, c1, w1 = sim.figures(), sample(pids), time.monotonic()
            pods_running.expect(pods)
            with trio.fail_after(PHASE_TIMEOUT):
                if shape == "deployment":
                    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
                    await client.request("POST", path, body=msgspec.json.encode(deployment(pods)))
                else:
                    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

                    async def post_pod(i: int, limit: trio.Semaphore) -> None:
                        async with limit:
                            body = msgspec.json.encode(bound_pod(i, f"node-{i % n}"))
                            await client.request("POST", path, body=body)

                    async with trio.open_nursery() as posting:
                        limit = trio.Semaphore(CONCURRENT_POSTS)
                        for i in range(pods):
                            posting.start_soon(post_pod, i, limit)
                await pods_running.reached.wait()
            s2, c2, w2 = sim.figures(), sample(pids), time.monotonic()
            nursery.cancel_scope.cancel()
    finally:
        sim.close()

    def server_cpu(a: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]]) -> float:
        return sum(b[name][0] - a[name][0] for name in server_pids)

    def by_process(
        a: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]], per: int
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each process's CPU ms per object, and seconds it waited for a core, a to b."""
        cpu = {name: round((b[name][0] - a[name][0]) * 1000 / per, 3) for name in pids}
        waited = {name: round(b[name][1] - a[name][1], 2) for name in pids}
        return cpu, waited

    def floor(a: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]]) -> float:
        """The phase's wall time if nothing else ran on this machine's cores: all the CPU the
        processes spent over the cores, or the busiest one-threaded (Python) process's."""
        spent = {name: b[name][0] - a[name][0] for name in pids}
        single = [cpu for name, cpu in spent.items() if name not in GO_PROCESSES]
        return round(max(sum(spent.values()) / CORES, *single), 2)

    node_cpu, node_waits = by_process(c0, c1, n)
    pod_cpu, pod_waits = by_process(c1, c2, max(pods, 1))
    return {
        "nodes": n,
        "pods": pods,
        "shape": shape,
        "nodes_ready_s": round(w1 - w0, 2),
        "pods_running_s": round(w2 - w1, 2),
        "nodes_cpu_floor_s": floor(c0, c1),
        "pods_cpu_floor_s": floor(c1, c2),
        "sim_cpu_ms_per_node": round((s1["cpu_s"] - s0["cpu_s"]) * 1000 / n, 3),
        "sim_cpu_ms_per_pod": round((s2["cpu_s"] - s1["cpu_s"]) * 1000 / max(pods, 1), 3),
        # The share of the simulation's CPU its garbage collector took, over both phases.
        "sim_gc_share": round((s2["gc_s"] - s0["gc_s"]) / max(s2["cpu_s"] - s0["cpu_s"], 1e-9), 3),
        "server_cpu_ms_per_node": round(server_cpu(c0, c1) * 1000 / n, 3),
        "server_cpu_ms_per_pod": round(server_cpu(c1, c2) * 1000 / max(pods, 1), 3),
        "cpu_ms_per_node_by_process": node_cpu,
        "cpu_ms_per_pod_by_process": pod_cpu,
        "waited_for_cpu_s_nodes_phase": node_waits,
        "waited_for_cpu_s_pods_phase": pod_waits,
        "writes_per_node": round((s1["writes"] - s0["writes"]) / n, 2),
        "writes_per_pod": round((s2["writes"] - s1["writes"]) / max(pods, 1), 2),
        "writes": int(s2["writes"]),
        "refused": int(s2["refused"]),
        "reads_back": int(s2["reads"]),
        "sim_rss_mib": round(s2["rss_mib"], 1),
        "sim_peak_rss_mib": round(s2["peak_rss_mib"], 1),
    }


def on_server(name: str, n: int, per_node: int, shape: str) -> dict[str, Any]:
    with SERVERS[name]() as (kubeconfig, pids):
        result = trio.run(measure, kubeconfig, pids, n, per_node, shape)
    print(json.dumps({"server": name, **result}), flush=True)
    return result


RATIOS = (
    "nodes_ready_s",
    "pods_running_s",
    "sim_cpu_ms_per_node",
    "sim_cpu_ms_per_pod",
    "writes_per_pod",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[500])
    parser.add_argument(
        "--pods-per-node",
        type=int,
        default=PODS_PER_NODE,
        help="pods per node (0: nodes only; 2 at N=5000 is KWOK's 10 000 pods)",
    )
    parser.add_argument(
        "--shape",
        choices=SHAPES,
        default="deployment",
        help="deployment: one Deployment (the simulation's replicaset controller, scheduler and "
        "kubelet act); bound: pods posted with spec.nodeName, as KWOK's benchmark posts them "
        "(only the kubelet acts)",
    )
    parser.add_argument("--quick", action="store_true", help="N = 20 (200 pods)")
    parser.add_argument("--servers", default="emulator,real", help="emulator, real or both")
    parser.add_argument("--serve-simulation", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_simulation:
        serve_simulation(args.serve_simulation)
        return
    if args.pods_per_node < 0:
        parser.error(f"--pods-per-node: {args.pods_per_node} is negative")
    servers = [s for s in args.servers.split(",") if s]
    unknown = sorted(set(servers) - set(SERVERS))
    if unknown:
        parser.error(f"--servers: unknown {', '.join(unknown)} (known: emulator, real)")
    if "real" in servers and available() is None:
        servers.remove("real")
    sizes = [20] if args.quick else sorted(args.nodes)
    per_node = args.pods_per_node
    out: dict[str, Any] = {
        name: [on_server(name, n, per_node, args.shape) for n in sizes] for name in servers
    }
    if "emulator" in out and "real" in out:
        largest_real, largest_emu = out["real"][-1], out["emulator"][-1]
        for figure in RATIOS:
            out[f"real_over_emulator_{figure}"] = round(
                largest_real[figure] / max(largest_emu[figure], 1e-9), 3
            )
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
