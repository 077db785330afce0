"""Memory at rest: the RSS of ``kubetrio run`` with every built-in controller, once its caches
have synced and its workers wait, against controller-runtime's at the same point.

What is compared, on the same API server, one after the other:

* ``kubetrio``: ``kubetrio run --kubeconfig K`` with its default controllers (machine,
  machinetermination, node, machineclass, machineset, machinedeployment, safety, nodedelete,
  storagegc): twelve informers, leader election, metrics and probes. Measured when the last
  controller's workers started plus ``--settle`` seconds; the figure is VmRSS, and VmHWM (the
  start-up peak) beside it;
* ``controller-runtime``: crbench (controller-runtime v0.24.1, ``../shared/anchors``) running one
  no-op ConfigMap controller, measured ``--settle`` seconds after its cache synced. It does less
  (one informer, no metrics of ours), so the ratio flatters it: the figure to read is kubetrio's
  own against the 50 MiB target.

Both servers when ``KUBEBUILDER_ASSETS`` names a control plane (``realserver.py``): the emulator
(``kubetrio emulator``, a separate process) and the real kube-apiserver. The caches hold what a
fresh cluster has (its namespaces, the real server's ServiceAccounts and Secrets), so the figure
is the cost of the process and its imports, which is what the target is about.

    python tests/bench/memory.py [--settle 3]    # last line: RESULT {json}
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/memory.py``: keep this folder (queue.py!) from shadowing stdlib;
# its helpers (realserver.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

import argparse
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from crbaseline import binary as crbench_binary
from realserver import real_server

TARGET_MIB = 50.0
START_TIMEOUT = 120.0
# The controller whose workers start last: the storage GC schedules itself after them.
READY_LINE = "storage GC scheduled"


class Process:
    """A child process whose output is read line by line in a thread, so its pipe never
    fills, and whose lines can be waited for."""

    def __init__(self, command: list[str], log: Path) -> None:
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            self._log.write(line)
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self._lines:
                    if text in line:
                        return line
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise SystemExit(
                        f"{self.proc.args[0]} exited before {text!r}: see {self._log.name}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"no {text!r} within {timeout:.0f} s: see {self._log.name}")
                self._changed.wait(left)

    def tail(self, lines: int = 20) -> str:
        return "".join(self._lines[-lines:])

    def memory(self) -> dict[str, float]:
        """VmRSS and VmHWM in MiB."""
        figures = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                figures[name] = int(value.split()[0]) / 1024
        return figures

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        self._log.close()


@contextmanager
def running(command: list[str], log: Path) -> Iterator[Process]:
    process = Process(command, log)
    try:
        yield process
    finally:
        process.stop()


@contextmanager
def emulator(workdir: Path) -> Iterator[tuple[Path, list[str]]]:
    """``kubetrio emulator`` in its own process with the simulated cloud and storage service:
    its kubeconfig, and the flags pointing a manager at those services (at rest nothing calls
    them, so they serve the real server's run too)."""
    kubeconfig = workdir / "emulator.kubeconfig"
    command = [sys.executable, "-m", "kubetrio.cmd.main", "emulator", "--simulate"]
    command += ["--storage-sim", "--kubeconfig-out", str(kubeconfig)]
    with running(command, workdir / "emulator.log") as emu:
        emu.wait_for("kubetrio emulator serving")
        cloud = emu.wait_for("cloud-endpoint=").strip().partition("=")[2]
        storage = emu.wait_for("storage-backend=").strip().partition("=")[2]
        yield kubeconfig, ["--sim-cloud-url", cloud, "--storage-backend-url", storage]


def install_crds(kubeconfig: Path) -> None:
    crds = subprocess.run(
        [sys.executable, "-m", "kubetrio.cmd.main", "crds"], capture_output=True, check=True
    ).stdout
    kubectl = shutil.which("kubectl") or "kubectl"
    subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", "-"],
        input=crds,
        capture_output=True,
        check=True,
    )


def manager_command(kubeconfig: Path, services: list[str]) -> list[str]:
    """``kubetrio run`` with its default (every built-in) controllers against ``kubeconfig``."""
    return [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        *services,
    ]


def kubetrio_at_rest(
    kubeconfig: Path, services: list[str], workdir: Path, settle: float
) -> dict[str, float]:
    command = manager_command(kubeconfig, services)
    with running(command, workdir / f"kubetrio-{kubeconfig.stem}.log") as manager:
        manager.wait_for(READY_LINE)
        time.sleep(settle)  # what start-up left for the garbage collector is collected
        figures = manager.memory()
        figures["warnings"] = sum(" level=warn" in line for line in manager._lines)
        return figures


def crbench_at_rest(
    crbench: Path, kubeconfig: Path, workdir: Path, settle: float
) -> dict[str, float]:
    command = [str(crbench), "reconcile", "--kubeconfig", str(kubeconfig)]
    command += ["--namespace", "default", "--n", "1", "--report-sync"]
    with running(command, workdir / f"crbench-{kubeconfig.stem}.log") as manager:
        manager.wait_for("SYNCED")
        time.sleep(settle)
        return manager.memory()


def measure(
    kubeconfig: Path, services: list[str], workdir: Path, settle: float, crbench: Path | None
) -> dict:
    install_crds(kubeconfig)
    result: dict[str, object] = {
        "kubetrio": kubetrio_at_rest(kubeconfig, services, workdir, settle)
    }
    if crbench is not None:
        result["controller_runtime"] = crbench_at_rest(crbench, kubeconfig, workdir, settle)
    return result


def report(server: str, figures: dict) -> None:
    kt = figures["kubetrio"]
    line = f"{server:9} kubetrio RSS {kt['VmRSS']:5.1f} MiB (peak {kt['VmHWM']:5.1f})"
    cr = figures.get("controller_runtime")
    if cr:
        line += (
            f" | controller-runtime {cr['VmRSS']:5.1f} MiB | kt/cr {kt['VmRSS'] / cr['VmRSS']:.2f}"
        )
    verdict = "within" if kt["VmRSS"] <= TARGET_MIB else "OVER"
    print(f"{line} | {verdict} the {TARGET_MIB:.0f} MiB target", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=3.0, help="seconds at rest before reading")
    args = parser.parse_args()
    crbench = crbench_binary()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kubetrio-memory-") as tmp:
        workdir = Path(tmp)
        with emulator(workdir) as (kubeconfig, services):
            results["emulator"] = measure(kubeconfig, services, workdir, args.settle, crbench)
            report("emulator", results["emulator"])
            with real_server() as real:
                if real is not None:
                    results["real"] = measure(real, services, workdir, args.settle, crbench)
                    report("real", results["real"])
    summary: dict[str, object] = {"servers": results, "target_mib": TARGET_MIB}
    for server, figures in results.items():
        summary[f"{server}_kubetrio_rss_mib"] = figures["kubetrio"]["VmRSS"]
        if "controller_runtime" in figures:
            summary[f"{server}_kt_over_cr_rss"] = (
                figures["kubetrio"]["VmRSS"] / figures["controller_runtime"]["VmRSS"]
            )
    print("RESULT " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
