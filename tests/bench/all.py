"""Every benchmark in one command, and one table of the ratios each measured in its own run.

Why: each benchmark compares kubetrio with a baseline *measured in the same run on the same
machine* (a bare trio channel, pykube-ng, the official client, kopf, kubectl, a floor the
simulated cluster imposes), so only the ratios travel between machines. Running them one by
one and collecting the ratios by hand is how a flattering or stale figure gets into a note; this
runs them all at one chosen size, each in its own process, and prints the ratios side by side.
What each benchmark compares, and how, is in its own docstring; the figures measured so far, with
when and on what machine, are in ``docs/performance.md``.

Example::

    python tests/bench/all.py --quick               # CI sizes (what CI runs)
    python tests/bench/all.py                       # the full sizes docs/performance.md quotes
    python tests/bench/all.py --only informer,drain # a subset

Each benchmark's own output is passed through as it runs; the summary table follows, then
``RESULT {json}`` (every benchmark's ``RESULT`` by name). The exit status is non-zero when any
benchmark failed; the others still run. Needs the ``bench`` extra (kopf, kubernetes) and
kubectl 1.33 (see ``tests/bench/drain.py``), and a real control plane in ``KUBEBUILDER_ASSETS``
for the benchmarks that run both servers (informer, reconcile, drain, simulate, mcm_suites:
``realserver.py``; without it they leave the real half out, except under CI, where they fail).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/all.py``: keep this folder (queue.py!) from shadowing stdlib.
# Its helpers (realserver.py) still import, from the end of the path (also when loaded by path).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

import argparse
import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from realserver import SHARED, real_server

HERE = Path(__file__).resolve().parent

Figure = Callable[[dict[str, Any]], float]


def key(name: str) -> Figure:
    return lambda result: float(result[name])


@dataclass(frozen=True)
class Bench:
    """One benchmark script, its CI and full sizes, and the ratios its RESULT yields."""

    name: str
    quick: tuple[str, ...]
    full: tuple[str, ...]
    figures: dict[str, Figure] = field(default_factory=dict)
    # A part that only waits on its own real clock (the embedded demo): its arguments for a
    # second process of the same script, run while the next benchmark runs if that one is in
    # SIMULATED_TIME (else on its own), its RESULT merged into this benchmark's.
    beside: tuple[str, ...] = ()


BENCHES = (
    Bench(
        "queue",
        ("--items", "20000", "--rounds", "3"),
        (),
        {
            "queue / bare channel": key("b_over_a"),
            "queue with metrics / bare channel": key("c_over_a"),
        },
    ),
    Bench(
        "inprocess",
        ("--objects", "10000", "--rounds", "3"),
        (),
        {"controller / bare channel (reconciles/s)": key("b_over_a")},
    ),
    Bench(
        "metrics",
        ("--ops", "100000", "--series", "200", "--rounds", "3"),
        (),
        {
            "inc/s ours / prometheus_client": key("ratio_inc_per_s"),
            "observe/s ours / prometheus_client": key("ratio_observe_per_s"),
            "scrape time ours / prometheus_client": key("ratio_scrape_s"),
        },
    ),
    Bench(
        "emulator",
        ("--quick",),
        (),
        {"LIST / plain http.server LIST": lambda r: r["list_per_s"] / r["plain_list_per_s"]},
    ),
    Bench(
        "informer",
        ("--quick",),
        (),
        {
            "sync time kt / dict": key("kt_over_dict_time"),
            "sync time kt / pykube": key("kt_over_pykube_time"),
            "memory by RSS kt / dict": key("kt_over_dict_rss"),
            "kt KiB per pod by RSS": lambda r: r["kt_rss_bytes_per_pod"] / 1024,
            "kt sync peak / steady RSS": key("kt_peak_over_steady_rss"),
            "through the API, emulator: sync time kt / dict": key("emulator_kt_over_dict_time"),
            "through the API, real: sync time kt / dict": key("real_kt_over_dict_time"),
            "through the API, emulator: kt KiB per pod by RSS": key("emulator_kt_kib_per_pod"),
            "through the API, real: kt KiB per pod by RSS": key("real_kt_kib_per_pod"),
            "through the API, real: kt_stream (streaming list) KiB per pod by RSS": key(
                "real_kt_stream_kib_per_pod"
            ),
            "real: kube-apiserver CPU per sync, streaming list / LIST": lambda r: (
                r["real_kt_stream_server_cpu_s"] / r["real_kt_server_cpu_s"]
            ),
            "through the API, emulator: kt sync peak / steady RSS": key(
                "emulator_kt_peak_over_steady_rss"
            ),
            "through the API, real: kt sync peak / steady RSS": key("real_kt_peak_over_steady_rss"),
            "through the API, real: kt peak above steady (MiB)": key(
                "real_kt_peak_above_steady_mib"
            ),
            "through the API, real: kt_stream (streaming list) peak above steady (MiB)": key(
                "real_kt_stream_peak_above_steady_mib"
            ),
            "through the API, real: sync peak growth kt_stream / kt": key(
                "real_kt_stream_over_kt_peak"
            ),
            "through the API, emulator: sync peak growth kt_stream / kt": key(
                "emulator_kt_stream_over_kt_peak"
            ),
            "real: informer sync time kt / controller-runtime (full cache)": key(
                "real_kt_over_cr_full_sync_s"
            ),
            "real: informer sync CPU per pod kt / controller-runtime (full cache)": key(
                "real_kt_over_cr_full_cpu_us_per_pod"
            ),
            "real: RSS per cached pod kt / controller-runtime (full cache)": key(
                "real_kt_over_cr_full_kib_per_pod"
            ),
            "real: RSS per cached pod kt / controller-runtime (metadata cache)": key(
                "real_kt_over_cr_metadata_kib_per_pod"
            ),
            "real: sync peak per pod kt / controller-runtime (full cache)": key(
                "real_kt_over_cr_full_peak_kib_per_pod"
            ),
        },
    ),
    Bench(
        "reconcile",
        (
            "--objects",
            "2000",
            "--repeat",
            "1",
            "--min-window",
            "0",
            "--cross-objects",
            "500",
            "--cr-objects",
            "1000",
        ),
        (),
        {
            "e2e / kopf (burst)": key("e2e_over_kopf"),
            "e2e / kopf (streamed)": key("e2e_streamed_over_kopf"),
            "e2e / kopf (initial)": key("e2e_initial_over_kopf"),
            "CPU per object kopf / e2e (burst)": key("kopf_cpu_over_e2e"),
            "written->reconciled CPU per event real / emulator": key("real_over_emulator_cpu_us"),
            "written->reconciled latency p50 real / emulator": key(
                "real_over_emulator_latency_p50_ms"
            ),
            "written->reconciled latency p99 real / emulator": key(
                "real_over_emulator_latency_p99_ms"
            ),
            "real: CPU per watched event kt / controller-runtime (target <= 1.5)": key(
                "real_kt_over_cr_cpu_us"
            ),
            "real: initial, start -> first reconcile kt / controller-runtime": key(
                "real_kt_over_cr_initial_first_s"
            ),
            "real: initial, start -> all reconciled kt / controller-runtime": key(
                "real_kt_over_cr_initial_all_s"
            ),
            "real: initial, CPU per object kt / controller-runtime": key(
                "real_kt_over_cr_initial_cpu_us"
            ),
        },
    ),
    Bench(
        "drain",
        ("--pods", "20", "--pv-pods", "2", "--xs-pods", "20"),
        (),
        {
            "wall kt / kubectl": key("wall_ratio"),
            "wall kt / kubectl at equal rate limits": key("equal_limits_wall_ratio"),
            "all requests kt / kubectl": key("all_requests_ratio"),
            "volume drain wall / floor": lambda r: r["pv_wall_s"] / r["pv_floor_s"],
            "with PDBs: wall real / emulator": key("real_over_emulator_pdb_wall_s"),
            "with PDBs: requests per pod real / emulator": key(
                "real_over_emulator_pdb_requests_per_pod"
            ),
        },
    ),
    Bench(
        "machines",
        ("--machines", "100", "--waves", "5"),
        (),
        {
            "wall / boot baseline": key("wall_over_baseline"),
            "requests / floor": key("requests_over_floor"),
            "manager CPU ms per machine (slope; target <= 15)": key(
                "manager_cpu_ms_per_machine_slope"
            ),
            "embedded demo wall / the README's minute": key("demo_over_promise"),
        },
        beside=("--demo-only",),
    ),
    Bench("soak", ("--quick",), (), {"time with 25 % faults / without": key("time_ratio")}),
    Bench(
        "requests",
        ("--objects", "300", "--rounds", "1"),
        (),
        {
            "CPU per request wire / urllib3 in threads": lambda r: r["cpu_over_urllib3"]["wire"],
            "CPU per request iothread / urllib3 in threads": lambda r: r["cpu_over_urllib3"][
                "iothread"
            ],
        },
    ),
    Bench(
        "exec_credentials",
        ("--requests", "100"),
        (),
        {
            "ms per request kt / pykube-ng": lambda r: (
                r["kubetrio_ms_per_request"] / r["pykube_ms_per_request"]
            ),
        },
    ),
    Bench(
        "webhooks",
        ("--quick",),
        (),
        {"creates/s with a validating webhook / without": key("ratio_with_over_without")},
    ),
    Bench(
        "scale",
        ("--quick",),
        ("--machines", "10000"),
        {
            "scrape / plain prometheus_client": key("scrape_over_plain"),
            "RSS per machine KiB": key("rss_per_machine_kib"),
        },
    ),
    Bench(
        "simcluster",
        ("--quick",),
        ("--nodes", "200", "2000"),
        {"simulated cluster: CPU per pod, largest N / smallest": key("pods_growth")},
    ),
    Bench(
        "simulate",
        ("--quick",),
        ("--nodes", "500"),
        {
            "simulation: nodes Ready time real / emulator": key("real_over_emulator_nodes_ready_s"),
            "simulation: pods Running time real / emulator": key(
                "real_over_emulator_pods_running_s"
            ),
            "simulation: its CPU per pod real / emulator": key(
                "real_over_emulator_sim_cpu_ms_per_pod"
            ),
            "simulation: its writes per pod real / emulator": key(
                "real_over_emulator_writes_per_pod"
            ),
        },
    ),
    Bench(
        "memory",
        (),
        (),
        {
            "manager RSS at rest / controller-runtime's (emulator)": key("emulator_kt_over_cr_rss"),
            "manager RSS at rest / controller-runtime's (real)": key("real_kt_over_cr_rss"),
        },
    ),
    Bench(
        "mcm_suites",
        ("--quick",),
        (),
        {"MCM scenarios: wall real / emulator": key("real_over_emulator_s")},
    ),
    Bench(
        "secure_metrics",
        ("--scrapes", "100"),
        (),
        {
            "secure (cached) / plain scrape": lambda r: (
                r["secure_cached"]["median_ms"] / r["plain"]["median_ms"]
            ),
        },
    ),
)

# These run the same work on the emulator and on a real control plane, which is started once
# for all of them (``realserver.py``).
BOTH_SERVERS = {"informer", "reconcile", "drain"}
# simulate.py runs both too, but starts a control plane of its own for each size: its real
# server runs the controllers the simulation does not replace, and its nodes must not meet the
# others' benchmarks. mcm_suites.py runs pytest, whose kit starts the control plane its
# scenarios share.

# Their figures are in simulated seconds (trio's MockClock) and counts: a waiting process
# beside them changes none of them.
SIMULATED_TIME = {"soak"}

# Modules the benchmarks share, not benchmarks.
HELPERS = {"realserver", "crbaseline"}

# Run on their own: what they measure takes real time that no size makes short.
SEPARATE = {
    "leader_takeover": "lease expiries on the real clock, about a minute per round",
    "aws_driver": "figures without a baseline to divide by: EC2 requests and ms per lifecycle",
    "sharding": "replica processes over 10 000 objects, five configurations, paced: minutes",
    "churn": "the manager's RSS over ten minutes of churn: its point is the length of the run",
}


def run(bench: Bench, quick: bool) -> tuple[dict[str, Any] | None, float]:
    """Run one benchmark, passing its output through; its RESULT (None if it failed)."""
    command = [
        sys.executable,
        str(HERE / f"{bench.name}.py"),
        *(bench.quick if quick else bench.full),
    ]
    print(f"\n=== {bench.name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    result: dict[str, Any] | None = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith("RESULT "):
                result = json.loads(line.removeprefix("RESULT "))
    if proc.returncode != 0:
        print(f"=== {bench.name} FAILED (exit {proc.returncode})", flush=True)
        result = None
    return result, time.monotonic() - started


@dataclass
class Beside:
    """A benchmark's waiting part, running (``beside``)."""

    bench: Bench
    proc: subprocess.Popen[str]
    output: Any  # the temporary file its output goes to
    started: float

    @classmethod
    def start(cls, bench: Bench) -> Beside:
        command = [sys.executable, str(HERE / f"{bench.name}.py"), *bench.beside]
        print(f"\n=== {bench.name}, started to run beside: {' '.join(command[1:])}", flush=True)
        output = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by collect or stop)
        proc = subprocess.Popen(command, stdout=output, text=True)
        return cls(bench, proc, output, time.monotonic())

    def stop(self) -> None:
        """If all.py ends first: it ends too."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.output.close()

    def collect(self, results: dict[str, dict[str, Any] | None]) -> float:
        """Wait for it, pass its output through and merge its RESULT into its benchmark's;
        the seconds it ran."""
        code = self.proc.wait()
        seconds = time.monotonic() - self.started
        name = self.bench.name
        print(f"\n=== {name}, run beside: {' '.join(self.bench.beside)}", flush=True)
        self.output.seek(0)
        result: dict[str, Any] | None = None
        for line in self.output:
            print(line, end="", flush=True)
            if line.startswith("RESULT "):
                result = json.loads(line.removeprefix("RESULT "))
        self.output.close()
        if code != 0 or result is None:
            print(f"=== {name} (beside) FAILED (exit {code})", flush=True)
            results[name] = None
        elif (own := results.get(name)) is not None:
            own.update(result)
        return seconds


def table(results: dict[str, dict[str, Any] | None], seconds: dict[str, float]) -> str:
    rows: list[tuple[str, str, str]] = []
    for bench in BENCHES:
        if bench.name not in results:
            continue
        result = results[bench.name]
        if result is None:
            rows.append((bench.name, "FAILED", ""))
            continue
        for label, figure in bench.figures.items():
            try:
                value = f"{figure(result):.3f}"
            except (KeyError, TypeError, ZeroDivisionError) as error:
                value = f"n/a ({error!r})"
            rows.append((bench.name, label, value))
    width = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{'benchmark':<{width[0]}}  {'figure (same run)':<{width[1]}}  value"]
    for name, label, value in rows:
        lines.append(f"{name:<{width[0]}}  {label:<{width[1]}}  {value}")
    # A part run beside another benchmark took no time of its own.
    total = sum(s for name, s in seconds.items() if " beside" not in name)
    lines.append(
        f"({len(results)} benchmarks in {total:.0f} s: "
        + ", ".join(f"{name} {s:.0f} s" for name, s in seconds.items())
        + ")"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI sizes (a few minutes)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    args = parser.parse_args()
    names = [b.name for b in BENCHES]
    wanted = [n for n in args.only.split(",") if n] or names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(
            f"--only: unknown benchmark(s) {', '.join(unknown)} (known: {', '.join(names)})"
        )
    results: dict[str, dict[str, Any] | None] = {}
    seconds: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        if BOTH_SERVERS & set(wanted) and not os.environ.get(SHARED):
            started = time.monotonic()
            real = stack.enter_context(real_server())
            if real is not None:
                os.environ[SHARED] = str(real)
                seconds["real server start"] = time.monotonic() - started
        beside: Beside | None = None
        for bench in BENCHES:
            if bench.name not in wanted:
                continue
            if beside is not None and bench.name not in SIMULATED_TIME:
                seconds[f"{beside.bench.name} beside"] = beside.collect(results)
                beside = None
            results[bench.name], seconds[bench.name] = run(bench, args.quick)
            if beside is not None:
                seconds[f"{beside.bench.name} beside {bench.name}"] = beside.collect(results)
                beside = None
            if bench.beside:
                beside = Beside.start(bench)
                stack.callback(beside.stop)
        if beside is not None:
            seconds[f"{beside.bench.name} beside"] = beside.collect(results)
    print("\n=== summary\n" + table(results, seconds), flush=True)
    print("RESULT " + json.dumps(results), flush=True)
    if any(result is None for result in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
