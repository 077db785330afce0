"""Lock-free series (``runtime/metrics/families.py``) against prometheus_client's own, in one run.

(1) ``inc``: ``counter.labels(...)`` bound once, then ``--ops`` increments, ops/s;
(2) ``observe``: the same with a histogram on controller-runtime's 40 reconcile buckets;
(3) ``scrape``: ``generate_latest`` of a registry holding ``--series`` counter series and as
    many histogram series (the shape of per-controller/per-queue families), seconds per scrape.

Each figure is the median of ``--rounds`` rounds of one implementation, then the other; the
ratio ours/theirs is printed (> 1 for ops/s means faster, < 1 for scrape time means faster).
``python tests/bench/metrics.py``; last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/metrics.py``: keep this folder (queue.py!) from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kubetrio.runtime.controller.metrics import RECONCILE_TIME_BUCKETS
from kubetrio.runtime.metrics.families import LoopCounter, LoopHistogram

IMPLEMENTATIONS: dict[str, tuple[type, type]] = {
    "prometheus_client": (Counter, Histogram),
    "loopmetrics": (LoopCounter, LoopHistogram),
}
# Spread over the buckets as reconcile times are: mostly fast, some slow.
SAMPLES = (0.0004, 0.003, 0.012, 0.07, 0.3, 0.9, 2.2, 8.0, 45.0, 120.0)


def inc_rate(counter_type: type, ops: int) -> float:
    series = counter_type("c_total", "c", ["controller"], registry=CollectorRegistry())
    inc = series.labels("bench").inc
    start = time.perf_counter()
    for _ in range(ops):
        inc()
    return ops / (time.perf_counter() - start)


def observe_rate(histogram_type: type, ops: int) -> float:
    series = histogram_type(
        "h_seconds",
        "h",
        ["controller"],
        buckets=RECONCILE_TIME_BUCKETS,
        registry=CollectorRegistry(),
    )
    observe = series.labels("bench").observe
    values = SAMPLES * (ops // len(SAMPLES))
    start = time.perf_counter()
    for value in values:
        observe(value)
    return len(values) / (time.perf_counter() - start)


def scrape_seconds(counter_type: type, histogram_type: type, series: int) -> float:
    registry = CollectorRegistry()
    counter = counter_type("c_total", "c", ["controller", "result"], registry=registry)
    histogram = histogram_type(
        "h_seconds", "h", ["controller"], buckets=RECONCILE_TIME_BUCKETS, registry=registry
    )
    for i in range(series):
        counter.labels(f"c{i}", "success").inc(i)
        histogram.labels(f"c{i}").observe(SAMPLES[i % len(SAMPLES)])
    start = time.perf_counter()
    generate_latest(registry)
    return time.perf_counter() - start


def median_of(rounds: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=500_000)
    parser.add_argument("--series", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {name: {} for name in IMPLEMENTATIONS}
    for name, (counter, histogram) in IMPLEMENTATIONS.items():
        f = figures[name]
        f["inc_per_s"] = median_of(args.rounds, functools.partial(inc_rate, counter, args.ops))
        f["observe_per_s"] = median_of(
            args.rounds, functools.partial(observe_rate, histogram, args.ops)
        )
        f["scrape_s"] = median_of(
            args.rounds, functools.partial(scrape_seconds, counter, histogram, args.series)
        )
    ours, theirs = figures["loopmetrics"], figures["prometheus_client"]
    print(f"series per family for the scrape: {args.series}")
    print(f"{'':22}{'prometheus_client':>20}{'loopmetrics':>16}{'ratio':>8}")
    for key, unit in (("inc_per_s", "ops/s"), ("observe_per_s", "ops/s"), ("scrape_s", "s")):
        ratio = ours[key] / theirs[key]
        print(f"{key + ' (' + unit + ')':22}{theirs[key]:20,.4g}{ours[key]:16,.4g}{ratio:8.2f}")
    result = {
        f"{impl}_{key}": round(value, 6) for impl, f in figures.items() for key, value in f.items()
    }
    for key in ("inc_per_s", "observe_per_s", "scrape_s"):
        result[f"ratio_{key}"] = round(ours[key] / theirs[key], 3)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
