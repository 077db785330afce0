"""Machine soak under faults: N machines (default 50) created, a workload spread over their
nodes, then every machine deleted — once against a healthy API server, once with about a
quarter of the API requests failing — in one process, on trio's MockClock (simulated time:
the figures are seconds of the controller's clock, not of this machine's CPU).

Each run is ``tests/helpers/soak.py``'s ``soak()``: a fresh emulator with the simulated cluster
(kubelets, scheduler, ReplicaSets; pods start in 0.05 s, grace periods scaled by 0.01), the
machine CRDs, one ``sim`` MachineClass whose VMs boot in 10 s, and the machine controller on a
manager exactly as ``kubetrio run`` wires it (5 workers, MCM's timeouts, the client's default
20 qps / burst 30). Once the caches have synced, the faulty run adds the rules of
``fault_rules()`` (each rolls on its own, seeded): 500 (8 %), 503 (7 %), 429 with Retry-After
1 s (7 %), 409 on patches (12 %), 410 on lists (5 %) and watches (20 %, an ERROR event as
kube-apiserver sends), 0.5 s of latency (20 %), and every watch stream cut after 5 s. The
emulator's own cluster behaviours act in-process and see no faults; only the controller's
requests do. Machines are created through the emulator's store, all at once; once all are
Running a ReplicaSet of 2N pods is placed on their nodes; then all are deleted at once.

**Compared**: ``time_ratio`` = (create_s + delete_s) of the faulty run over the same of the
fault-free run, both measured in this invocation. ``create_s`` runs from the first create to
the last machine Running, ``delete_s`` from the first delete to the last machine gone (the
workload's placement between them is not counted). ``failed_fraction`` is the share of the
controller's API requests (watches aside) answered with an injected failure.

**Left behind** (counted from the emulator's store, not the controller's cache): VMs at the
simulated cloud (``orphan_vms``), Machines still present (``stuck_finalizers``),
bootstrap-token Secrets in kube-system (``tokens_left``), Nodes, and pods still bound to a Node
that no longer exists (``pods_on_gone_nodes``). Targets: every machine completes, all of these
0, ``time_ratio`` ≤ 3.

``python tests/bench/soak.py [--machines N] [--seed S] [--quick]``; ``--quick`` is 10 machines
(CI). Last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/soak.py``: keep this folder (queue.py!) from shadowing stdlib,
# and reach the soak harness as ``tests.helpers``.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import argparse
import json
import time
from typing import Any

import trio
import trio.testing

from kubetrio.runtime.util.log import configure_logging
from tests.helpers.soak import SoakFigures, soak

# As tests/helpers/kube.py: real HTTP is in flight, so the clock jumps only when all is idle.
AUTOJUMP = 0.05


async def both(machines: int, seed: int) -> tuple[SoakFigures, SoakFigures, float, float]:
    wall = time.perf_counter()
    calm = await soak(machines, faults=False, seed=seed)
    calm_wall = time.perf_counter() - wall
    wall = time.perf_counter()
    stormy = await soak(machines, faults=True, seed=seed)
    return calm, stormy, calm_wall, time.perf_counter() - wall


def report(calm: SoakFigures, stormy: SoakFigures, walls: tuple[float, float]) -> dict[str, Any]:
    ratio = stormy.seconds / calm.seconds if calm.seconds else float("inf")
    return {
        "machines": stormy.machines,
        "completed": stormy.completed,
        "completed_fault_free": calm.completed,
        "time_ratio": round(ratio, 2),
        "seconds": round(stormy.seconds, 1),
        "seconds_fault_free": round(calm.seconds, 1),
        "create_s": round(stormy.create_s, 1),
        "create_s_fault_free": round(calm.create_s, 1),
        "delete_s": round(stormy.delete_s, 1),
        "delete_s_fault_free": round(calm.delete_s, 1),
        "failed_fraction": round(stormy.failed_fraction, 3),
        "requests": stormy.requests,
        "requests_fault_free": calm.requests,
        "injected": {str(k): v for k, v in sorted(stormy.injected.items())},
        "orphan_vms": stormy.orphan_vms + calm.orphan_vms,
        "stuck_finalizers": stormy.stuck_finalizers + calm.stuck_finalizers,
        "tokens_left": stormy.tokens_left + calm.tokens_left,
        "nodes_left": stormy.nodes_left + calm.nodes_left,
        "pods_on_gone_nodes": stormy.pods_on_gone_nodes + calm.pods_on_gone_nodes,
        "failed_steps": sum(stormy.step_failures.values()),
        "wall_s": round(walls[1], 1),
        "wall_s_fault_free": round(walls[0], 1),
        "clock": "trio MockClock (simulated seconds)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=50, help="N (default 50)")
    parser.add_argument("--seed", type=int, default=1, help="the fault rules' random seed")
    parser.add_argument("--quick", action="store_true", help="10 machines (CI)")
    args = parser.parse_args()
    machines = 10 if args.quick else args.machines
    configure_logging(level="error")
    calm, stormy, calm_wall, stormy_wall = trio.run(
        both, machines, args.seed, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP)
    )
    for figures in (calm, stormy):
        print(json.dumps(figures.to_json()), flush=True)
    result = report(calm, stormy, (calm_wall, stormy_wall))
    print(
        f"time ratio {result['time_ratio']} ({result['seconds']} s with faults, "
        f"{result['seconds_fault_free']} s without), {result['completed']}/{machines} completed"
    )
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
