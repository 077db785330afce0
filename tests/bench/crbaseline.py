"""controller-runtime, the baseline kubetrio is measured against on the same real server.

Why: kopf, pykube-ng and the official client are Python baselines; the one a user weighs a
controller framework against is controller-runtime, on a real kube-apiserver. ``crbench`` (a
small controller-runtime v0.24.1 / client-go v0.36.3 program, ``../shared/anchors/README.md``)
does the work ``reconcile.py`` and ``informer.py`` do, so each runs it beside kubetrio against
the same real server, one after the other, and prints kt/cr ratios.

The binary: ``KUBETRIO_CRBENCH`` if set (CI sets it: ``.ci/run`` unpacks it as it installs the
control plane), else ``../shared/anchors/install`` beside the checkout unpacks it. Without it
the baseline is left out with a note, except under CI, where the benchmark fails naming what is
missing. Its times are CLOCK_MONOTONIC (``time.monotonic()`` here), its CPU the process's
user+system seconds: both comparable with this process's own.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from kubetrio.testing.plugin import in_ci

ENV = "KUBETRIO_CRBENCH"
INSTALL = Path(__file__).resolve().parents[3] / "shared" / "anchors" / "install"
TIMEOUT = 600.0


def binary() -> Path | None:
    """crbench's path; None (with a note) when there is none outside CI; ``SystemExit`` naming
    what is missing under CI. Call it first thing, so CI fails before the work."""
    named = os.environ.get(ENV)
    if named:
        if Path(named).is_file() and os.access(named, os.X_OK):
            return Path(named)
        missing = f"{ENV}={named} is not an executable file"
    elif INSTALL.is_file():
        done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            path = Path(done.stdout.strip().splitlines()[-1])
            os.environ[ENV] = str(path)  # the benchmark's children find it unpacked
            return path
        missing = f"{INSTALL} failed: {done.stderr.strip()[-300:]}"
    else:
        missing = f"no crbench: {ENV} is unset and {INSTALL} is missing"
    if in_ci():
        raise SystemExit(f"{missing}; CI measures controller-runtime beside kubetrio")
    print(f"controller-runtime: not measured ({missing})", flush=True)
    return None


class Process:
    """One crbench run; its output lines (``WORD fields…``) read in a thread, so a wait can
    time out instead of hanging on a child that stopped printing."""

    def __init__(self, crbench: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(crbench), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                self._lines.put(line.strip())
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, word: str) -> list[str]:
        """The fields of the next line starting with ``word``."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                self.proc.wait()
                stderr = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(
                    f"crbench exited ({self.proc.returncode}) before {word}: {stderr[-2000:]}"
                )
            word_, _, rest = line.partition(" ")
            if word_ == word:
                return rest.split()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def create(crbench: Path, kubeconfig: str, namespace: str, n: int, prefix: str) -> float:
    """``crbench create``: N ConfigMaps (``prefix0`` …), protobuf, 8 at once; the
    ``time.monotonic()`` at which the last was answered."""
    with Process(
        crbench,
        "create",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--n",
        str(n),
        "--prefix",
        prefix,
    ) as run:
        end, _seconds, objects, failed = run.wait_for("CREATE_END")
    if int(failed) or int(objects) != n:
        raise RuntimeError(f"crbench create: {objects} of {n} created, {failed} failed")
    return float(end)


def informer(crbench: Path, kubeconfig: str, cache: str, expect: int) -> dict[str, Any]:
    """``crbench informer --cache CACHE``: its RESULT (seconds, sync CPU, RSS figures)."""
    with Process(
        crbench, "informer", "--kubeconfig", kubeconfig, "--cache", cache, "--expect", str(expect)
    ) as run:
        result: dict[str, Any] = json.loads(" ".join(run.wait_for("RESULT")))
    if result["pods"] != expect:
        raise RuntimeError(f"crbench informer cached {result['pods']} pods, expected {expect}")
    return result
