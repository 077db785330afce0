"""Every MCM scenario of the both-servers harness, on the emulator and on a real kube-apiserver:
wall time and pass/fail per scenario and server.

Why: the MCM port's controllers (machine, MachineSet, MachineDeployment, safety, storage) were
written against our own emulator. The scenarios in ``tests/controllers/test_mcm_*both_servers.py``
(and the in-place update and preservation modules) run them end to end beside the simulated world
(``tests/helpers/mcm_world.py``), each once on the emulator and once on a real control plane (etcd,
kube-apiserver and kube-controller-manager running only the garbage-collector, namespace and
ServiceAccount controllers, from ``KUBEBUILDER_ASSETS``). CI runs the cheaper ones; those marked
``bench`` (a rollback through two rollouts, an API outage that must freeze the machine controller)
are too long for its budget and run here, with all the others.

What is compared: for each scenario, the same test on the two servers — whether it passed on
each, and its wall time (the test's call alone, on the mock clock: simulated waits are free, so
the time is the real work of the manager, the simulated world and the server, and the real
control plane's start-up is not in it). ``real / emulator`` per scenario and over all of them
says what the real server costs the suite; a scenario that passes on one server only is the
finding the benchmark exists for (the real server is right).

Each run is a pytest process over the scenario modules (serial, so the times are not shared
out between workers). ``--quick``: one scenario of each kind that CI runs (drain with a budget,
drain with volumes, storage, two clusters: each boots machines), under a minute; ``-k`` selects by
pytest's expression instead. Exits non-zero when any scenario failed or errored on either
server. Last line ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "tests/controllers/test_mcm_both_servers.py",
    "tests/controllers/test_mcm_more_both_servers.py",
    "tests/controllers/test_mcm_rules_both_servers.py",
    "tests/controllers/test_mcm_inplace.py",
    "tests/controllers/test_mcm_preservation.py",
)
SERVERS = ("emulator", "real")
QUICK = (
    "test_deleting_a_machine_drains_it_within_the_budget",
    "test_a_drain_moves_volume_pods_and_their_volumes_are_attached_on_the_new_node",
    "test_a_deleted_machines_storage_node_goes_and_the_gc_removes_orphans",
    "test_machines_in_the_control_cluster_join_the_target_cluster",
)
CASE = re.compile(r"^(?P<scenario>\w+)\[(?P<server>emulator|real)\]$")


@dataclass
class Run:
    """One scenario on one server."""

    outcome: str  # passed, failed, error, skipped
    seconds: float
    message: str = ""


def runs(junit: Path) -> dict[str, dict[str, Run]]:
    """By scenario, then server, from pytest's JUnit XML."""
    found: dict[str, dict[str, Run]] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        match = CASE.match(case.get("name", ""))
        if match is None:
            continue
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = next(iter((child.get("message") or "").splitlines()), "")[:120]
                break
        runs_of = found.setdefault(match["scenario"], {})
        runs_of[match["server"]] = Run(outcome, float(case.get("time", "0")), message)
    return found


def pytest(selection: str, quiet: bool) -> tuple[dict[str, dict[str, Run]], float, int]:
    """The scenarios run by one pytest process: their runs, its wall time, its exit status."""
    with tempfile.TemporaryDirectory() as work:
        junit = Path(work) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            *MODULES,
            "--bench",
            "-q",
            "-p",
            "no:xdist",
            "-o",
            "junit_duration_report=call",
            f"--junitxml={junit}",
        ]
        if selection:
            command += ["-k", selection]
        print(f"=== {' '.join(command[1:])}", flush=True)
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, capture_output=quiet, text=True, check=False)
        wall = time.monotonic() - started
        if quiet and done.returncode != 0:
            print(done.stdout[-8000:], done.stderr[-4000:], sep="\n", flush=True)
        found = runs(junit) if junit.exists() else {}
    return found, wall, done.returncode


def table(found: dict[str, dict[str, Run]]) -> str:
    width = max([len("scenario"), *map(len, found)])
    lines = [f"{'scenario':<{width}}  {'emulator':>16}  {'real':>16}  real/emulator"]
    for scenario, by_server in found.items():
        cells = []
        for server in SERVERS:
            run = by_server.get(server)
            cells.append("absent" if run is None else f"{run.outcome} {run.seconds:6.2f} s")
        emulator, real = by_server.get("emulator"), by_server.get("real")
        ratio = (
            f"{real.seconds / emulator.seconds:.2f}"
            if emulator is not None and real is not None and emulator.seconds > 0
            else "n/a"
        )
        lines.append(f"{scenario:<{width}}  {cells[0]:>16}  {cells[1]:>16}  {ratio}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one scenario of each kind")
    parser.add_argument("-k", default="", help="pytest's -k expression (instead of --quick)")
    parser.add_argument("--verbose", action="store_true", help="pytest's output as it runs")
    args = parser.parse_args()
    if args.quick and args.k:
        parser.error("--quick and -k both select scenarios: give one")
    selection = " or ".join(QUICK) if args.quick else args.k
    if not os.environ.get("KUBEBUILDER_ASSETS"):
        print("KUBEBUILDER_ASSETS is not set: the real server's runs are skipped", flush=True)
    found, wall, status = pytest(selection, quiet=not args.verbose)
    print(table(found), flush=True)
    totals = {
        server: sum(r[server].seconds for r in found.values() if server in r) for server in SERVERS
    }
    bad = sorted(
        f"{scenario}[{server}]: {run.outcome} {run.message}".rstrip()
        for scenario, by_server in found.items()
        for server, run in by_server.items()
        if run.outcome in ("failed", "error")
    )
    print(
        f"{len(found)} scenarios; call time emulator {totals['emulator']:.1f} s, "
        f"real {totals['real']:.1f} s; pytest wall {wall:.1f} s",
        flush=True,
    )
    for line in bad:
        print(f"FAILED {line}", flush=True)
    result = {
        "scenarios": {
            scenario: {
                server: {"outcome": run.outcome, "s": round(run.seconds, 3)}
                for server, run in by_server.items()
            }
            for scenario, by_server in found.items()
        },
        "emulator_s": round(totals["emulator"], 3),
        "real_s": round(totals["real"], 3),
        "real_over_emulator_s": (
            round(totals["real"] / totals["emulator"], 3) if totals["emulator"] else None
        ),
        "failed": len(bad),
        "pytest_wall_s": round(wall, 1),
    }
    print("RESULT " + json.dumps(result), flush=True)
    if bad or status != 0 or not found:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
