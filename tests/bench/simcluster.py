"""Simulated cluster: CPU per change as the cluster grows (``kubetrio emulator --simulate``).

Why: every simulated controller is level-triggered, and a pass that reads the whole cluster
costs O(pods) on each change, so building a cluster one object at a time is O(pods²). This
measures what one change costs at two or more sizes: constant when passes visit only what
changed.

In this process's trio run on the real clock: ``serve_world(simulate=ClusterSimulation())``
(every controller on, no delays). Then, written straight into the emulator's store one object
at a time, with two trio checkpoints after each write so that every simulated controller runs
its pass for that one change (over HTTP, changes arriving while a pass runs would share the
next pass; here none do — the worst case, and the same for every size and checkout):

1. N Nodes (the kubelet posts each Ready): ``nodes_cpu_ms_per_node``.
2. 10·N unbound Pods (no owner, no volume): the scheduler binds each to the least loaded node,
   the kubelet starts it; until the last is Running: ``pods_cpu_ms_per_pod``.

CPU is this process's (``time.process_time``; far less noisy than wall time on a shared
machine), over each phase, divided by its count; wall seconds are reported too. The writes
themselves (store create) are in the figure and cost the same at every size.

The same-run ratio, ``pods_growth``: CPU per pod at the largest N over that at the smallest
(1.0: a change costs the same however large the cluster; a whole-cluster pass per change makes
it grow with N). ``python tests/bench/simcluster.py [--nodes N ...]`` (default 200 2000);
``--quick``: 50 and 200. Run it with another checkout's venv for a before/after on the same
machine (the script only uses the emulator's public API). Last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/simcluster.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import time
from typing import Any

import trio

from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.kinds import ResourceType
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import ClusterSimulation

PODS_PER_NODE = 10


def node(name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


async def _settle() -> None:
    """Let every woken simulated controller run its pass (and the passes their writes wake)."""
    await trio.lowlevel.checkpoint()
    await trio.lowlevel.checkpoint()


async def measure(n: int) -> dict[str, float]:
    async with serve_world(simulate=ClusterSimulation()) as emu:
        store = emu.store
        nodes = store.types.lookup("", "v1", "nodes")
        pods = store.types.lookup("", "v1", "pods")
        assert nodes is not None and pods is not None
        total = PODS_PER_NODE * n
        running = 0
        all_running = trio.Event()

        def count(rt: ResourceType, ev: WatchEvent) -> None:
            nonlocal running
            if rt.key != "pods" or ev.prev is None:
                return
            phase = (ev.entry.obj.get("status") or {}).get("phase")
            if phase == "Running" and (ev.prev.obj.get("status") or {}).get("phase") != phase:
                running += 1
                if running == total:
                    all_running.set()

        store.subscribe(count)
        c0, w0 = time.process_time(), time.monotonic()
        for i in range(n):
            store.create(nodes, "", node(f"node-{i}"))
            await _settle()
        c1 = time.process_time()
        for i in range(total):
            store.create(pods, "default", pod(f"pod-{i}"))
            await _settle()
        await all_running.wait()
        c2, w2 = time.process_time(), time.monotonic()
        result = {
            "nodes": n,
            "pods": total,
            "nodes_cpu_ms_per_node": round((c1 - c0) * 1000 / n, 3),
            "pods_cpu_ms_per_pod": round((c2 - c1) * 1000 / total, 3),
            "cpu_s": round(c2 - c0, 2),
            "wall_s": round(w2 - w0, 2),
        }
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--quick", action="store_true", help="N = 50 and 200")
    args = parser.parse_args()
    sizes = [50, 200] if args.quick else sorted(args.nodes)
    results = []
    for n in sizes:
        result = trio.run(measure, n)
        print(json.dumps(result), flush=True)
        results.append(result)
    growth = results[-1]["pods_cpu_ms_per_pod"] / results[0]["pods_cpu_ms_per_pod"]
    print("RESULT " + json.dumps({"sizes": results, "pods_growth": round(growth, 3)}), flush=True)


if __name__ == "__main__":
    main()
