"""In-process reconcile rate against a bare trio channel with the same workers, in one run.

(a) ``channel``: N distinct ``ObjectKey``s sent into an unbounded trio memory channel, drained by
    ``--workers`` tasks that each ``await`` the same no-op reconciler: the least a worker pool on
    trio can cost per key (no dedup, no priorities, no metrics).
(b) ``controller``: the same N keys added to a ``Controller``'s queue (metrics on, a private
    ``CollectorRegistry``), the same number of workers, the same no-op reconciler. This is
    ``tests/bench/reconcile.py``'s in-process figure.

Both do the same work per key and differ in how a worker gets the next one: (a)'s ``receive``
passes through trio's scheduler for every key; (b)'s workers take ready keys without that for up
to 1 ms (``WORKER_SLICE``), then yield, so (b) can come close to or pass (a) while paying for
dedup, priorities, rate-limiter bookkeeping and the metrics.

For each, the clock runs from the first add/send until the N-th reconcile returned; rounds
alternate (a), (b) so machine noise hits both; medians are reported with ``b/a`` (the target is
b >= 150 000/s and b/a >= 0.45). ``python tests/bench/inprocess.py [--objects N]``; last line
``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/inprocess.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import statistics
import time

import trio
from prometheus_client import CollectorRegistry

from kubetrio.runtime.controller.controller import Controller, Result
from kubetrio.runtime.controller.queue import ObjectKey

TARGET_PER_S = 150_000.0
TARGET_RATIO = 0.45


class NoOp:
    """Counts reconciles; sets ``done`` at the N-th."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0
        self.done = trio.Event()
        self.finished_at = 0.0
        self._result = Result()

    async def reconcile(self, key: ObjectKey) -> Result:
        self.calls += 1
        if self.calls == self.n:
            self.finished_at = time.perf_counter()
            self.done.set()
        return self._result


async def channel_round(keys: list[ObjectKey], workers: int) -> float:
    reconciler = NoOp(len(keys))
    send, receive = trio.open_memory_channel[ObjectKey](len(keys))

    async def worker() -> None:
        async for key in receive:
            await reconciler.reconcile(key)

    async with trio.open_nursery() as nursery:
        for _ in range(workers):
            nursery.start_soon(worker)
        start = time.perf_counter()
        for key in keys:
            send.send_nowait(key)
        await reconciler.done.wait()
        nursery.cancel_scope.cancel()
    return len(keys) / (reconciler.finished_at - start)


async def controller_round(keys: list[ObjectKey], workers: int) -> float:
    reconciler = NoOp(len(keys))
    controller: Controller[ObjectKey] = Controller(
        "bench", reconciler, workers=workers, registry=CollectorRegistry()
    )
    async with trio.open_nursery() as nursery:
        start = time.perf_counter()
        add = controller.queue.add
        for key in keys:
            add(key)
        nursery.start_soon(controller.run)
        await reconciler.done.wait()
        controller.stop()
    return len(keys) / (reconciler.finished_at - start)


async def measure(n: int, workers: int, rounds: int) -> tuple[float, float]:
    keys = [ObjectKey("bench", f"cm-{i}") for i in range(n)]
    await channel_round(keys[:1000], workers)  # warm-up
    await controller_round(keys[:1000], workers)
    channel, controller = [], []
    for _ in range(rounds):
        channel.append(await channel_round(keys, workers))
        controller.append(await controller_round(keys, workers))
    return statistics.median(channel), statistics.median(controller)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    channel, controller = trio.run(measure, args.objects, args.workers, args.rounds)
    ratio = controller / channel
    print(f"objects={args.objects} workers={args.workers} rounds={args.rounds}")
    print(f"(a) bare channel   {channel:12,.0f} reconciles/s")
    print(f"(b) controller     {controller:12,.0f} reconciles/s  (b/a {ratio:.2f})")
    ok = controller >= TARGET_PER_S and ratio >= TARGET_RATIO
    print(
        f"target b >= {TARGET_PER_S:,.0f}/s and b/a >= {TARGET_RATIO}: {'pass' if ok else 'MISS'}"
    )
    result = {
        "channel_per_s": round(channel),
        "controller_per_s": round(controller),
        "b_over_a": round(ratio, 3),
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
