"""kubectl against the emulator: an independent client to check what your controller wrote.

``kubectl`` (the fixture) runs the binary named by ``$KUBECTL``, else the ``kubectl`` on PATH
(or the ``kubectl.1.33`` beside it, where PATH holds a version dispatcher)::

    async def test_listed(emulator, kubectl):
        await kubectl.run("create", "configmap", "a", "--from-literal=k=v")
        assert (await kubectl.json("get", "configmap", "a"))["data"] == {"k": "v"}

While kubectl runs, the test's mock clock is held (it is a client request in flight, which
trio cannot see in another process), except for the commands that wait for the cluster to
change (``wait``, ``delete``, ``drain``, ``rollout``): those may need simulated time to pass.
Its ``timeout`` is real time: a jump of the mock clock never kills it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import trio
import yaml

from kubetrio.runtime.util.inflight import request_in_flight

# Subcommands that wait on the cluster: holding the clock meanwhile could stall them.
WAITING_COMMANDS = frozenset({"wait", "delete", "drain", "rollout"})

MISSING = (
    "kubectl not found: install kubectl (https://kubernetes.io/docs/tasks/tools/) "
    "or set $KUBECTL to its path"
)


def find_kubectl() -> str | None:
    """$KUBECTL if it exists, else ``kubectl.1.33`` beside the kubectl on PATH (a gcloud-style
    dispatcher), else that kubectl itself."""
    env = os.environ.get("KUBECTL")
    if env:
        return env if Path(env).exists() else None
    which = shutil.which("kubectl")
    if which is None:
        return None
    pinned = Path(os.path.realpath(which)).parent / "kubectl.1.33"
    return str(pinned) if pinned.exists() else which


def kubectl_env(kubeconfig: str | Path, home: Path) -> dict[str, str]:
    """kubectl's environment: the emulator's kubeconfig, and a HOME and cache of its own."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(home / "kube-cache"),
    }


@dataclass
class Kubectl:
    """A kubectl binary and the environment it runs in (kubeconfig, HOME); every call is
    recorded in ``calls``, and a failure raises with kubectl's output."""

    binary: str
    env: dict[str, str]
    timeout: float = 60.0
    calls: list[list[str]] = field(default_factory=list)

    async def run(
        self,
        *args: str,
        check: bool = True,
        stdin: bytes | None = None,
        hold_clock: bool | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run kubectl; ``check`` fails the test with its output on a non-zero exit.
        ``hold_clock`` None holds the mock clock unless the subcommand waits on the cluster."""
        cmd = [self.binary, *args]
        self.calls.append(cmd)
        if hold_clock is None:
            hold_clock = not WAITING_COMMANDS.intersection(args[:1])

        def call() -> subprocess.CompletedProcess[bytes]:
            # kubectl runs in real time: its timeout is too (a jump of the mock clock must not
            # kill it, and a held clock must not let it hang).
            try:
                return subprocess.run(
                    cmd, input=stdin, capture_output=True, env=self.env, timeout=self.timeout
                )
            except subprocess.TimeoutExpired as expired:
                raise AssertionError(
                    f"kubectl {' '.join(args)} did not finish within {self.timeout:g}s"
                ) from expired

        with request_in_flight() if hold_clock else contextlib.nullcontext():
            proc = await trio.to_thread.run_sync(call)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {proc.returncode}\n"
                f"stdout: {proc.stdout.decode()}\nstderr: {proc.stderr.decode()}"
            )
        return proc

    async def out(self, *args: str) -> str:
        """Run kubectl with ``args``; its standard output."""
        return (await self.run(*args)).stdout.decode()

    async def json(self, *args: str) -> Any:
        """Run kubectl with ``args`` and ``-o json``; the decoded answer."""
        return msgspec.json.decode((await self.run(*args, "-o", "json")).stdout)

    async def apply(self, docs: Sequence[dict[str, Any]]) -> str:
        """``kubectl apply -f -`` of ``docs`` (as one YAML stream); kubectl's output."""
        text = yaml.safe_dump_all(docs).encode()
        return (await self.run("apply", "-f", "-", stdin=text)).stdout.decode()
