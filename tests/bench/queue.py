"""Work queue cost per item against a bare trio memory channel, measured in one run.

(a) channel: ``send_nowait`` + ``await receive()``, the cheapest hand-off trio has;
(b) queue: ``add`` -> ``await get`` -> ``done`` over 1 000 distinct keys, metrics off;
(c) the same with metrics on (a private registry);
(d) 8 workers draining keys added by a producer, per item.
Each figure is the median of several rounds; ratios against (a) are what to compare across
machines. Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/queue.py``, this file's folder heads sys.path and the file would
# shadow the standard library's ``queue`` (which trio imports). Drop the folder first.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import statistics
import time

import trio
from prometheus_client import CollectorRegistry

from kubetrio.runtime.controller.queue import ObjectKey, WorkQueue
from kubetrio.runtime.controller.queuemetrics import workqueue_metrics

KEYS = [ObjectKey("default", f"pod-{i}") for i in range(1000)]


async def channel_cycle(n: int) -> float:
    send, receive = trio.open_memory_channel[ObjectKey](1)
    start = time.perf_counter()
    for i in range(n):
        send.send_nowait(KEYS[i % 1000])
        await receive.receive()
    return time.perf_counter() - start


async def queue_cycle(n: int, with_metrics: bool) -> float:
    metrics = workqueue_metrics(CollectorRegistry()) if with_metrics else None
    queue: WorkQueue[ObjectKey] = WorkQueue(name="bench", metrics=metrics)
    start = time.perf_counter()
    for i in range(n):
        queue.add(KEYS[i % 1000])
        key = await queue.get()
        queue.done(key)
    return time.perf_counter() - start


async def queue_workers(n: int, workers: int) -> float:
    """Batches of the 1 000 distinct keys, each drained by the workers before the next."""
    queue: WorkQueue[ObjectKey] = WorkQueue()
    pending = 0
    batch_done = trio.Event()

    async def worker() -> None:
        nonlocal pending
        while True:
            key = await queue.get()
            queue.done(key)
            pending -= 1
            if pending == 0:
                batch_done.set()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(workers):
            nursery.start_soon(worker)
        for _ in range(n // len(KEYS)):
            batch_done = trio.Event()
            pending = len(KEYS)
            for key in KEYS:
                queue.add(key)
            await batch_done.wait()
        elapsed = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return elapsed


async def measure(n: int, rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"channel": [], "queue": [], "metrics": [], "workers": []}
    for _ in range(rounds):  # interleaved, so machine noise hits every variant alike
        samples["channel"].append(await channel_cycle(n))
        samples["queue"].append(await queue_cycle(n, with_metrics=False))
        samples["metrics"].append(await queue_cycle(n, with_metrics=True))
        samples["workers"].append(await queue_workers(n, 8))
    return {name: statistics.median(values) / n * 1e6 for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    us = trio.run(measure, args.items, args.rounds)
    result = {
        "channel_us": round(us["channel"], 3),
        "queue_us": round(us["queue"], 3),
        "queue_metrics_us": round(us["metrics"], 3),
        "queue_8_workers_us": round(us["workers"], 3),
        "b_over_a": round(us["queue"] / us["channel"], 3),
        "c_over_a": round(us["metrics"] / us["channel"], 3),
    }
    print(f"(a) channel send+receive     {us['channel']:8.3f} us/item")
    print(f"(b) queue add+get+done       {us['queue']:8.3f} us/item  ({result['b_over_a']}x a)")
    print(f"(c) same, metrics on         {us['metrics']:8.3f} us/item  ({result['c_over_a']}x a)")
    print(f"(d) 8 workers                {us['workers']:8.3f} us/item")
    print("targets: b/a <= 1.5, c/a <= 3.0")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
