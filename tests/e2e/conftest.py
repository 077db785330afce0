"""Fixtures and helpers for end-to-end tests against the emulator over HTTP.

``emu`` serves the emulator inside the test's own trio run (same clock); ``client`` is an async
HTTP client on that run; ``kube`` is our typed client on it; ``kubectl`` runs the real kubectl
1.33 binary against it and ``kubectl_of`` any other release. ``blocking``/``pykube_api`` run
pykube-ng in worker threads; ``configmap`` builds a plain ConfigMap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pykube
import pytest
import trio
import trio.testing
import yaml

from kubetrio.runtime.client import Client
from kubetrio.runtime.emulator import Emulator, serve_emulator
from kubetrio.runtime.emulator.testclient import EmuClient

T = TypeVar("T")


def find_kubectl() -> str | None:
    """$KUBECTL, else the fixed 1.33 binary beside the real kubectl (the one on PATH is a
    gcloud dispatcher)."""
    env = os.environ.get("KUBECTL")
    if env:
        return env if Path(env).exists() else None
    which = shutil.which("kubectl")
    if which is None:
        return None
    candidate = Path(os.path.realpath(which)).parent / "kubectl.1.33"
    return str(candidate) if candidate.exists() else None


# How long every task must sit idle before the mock clock jumps. Real I/O is in flight in
# these tests (HTTP to the emulator, worker threads); on a loaded two-core machine a round trip
# can exceed 20 ms, and a jump then would let deadlines fire while a response is on its way.
IO_AUTOJUMP = 0.05


@pytest.fixture
def mock_clock() -> trio.testing.MockClock:
    """Autojump with a small threshold: real HTTP is in flight, so jump only when idle."""
    return trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP)


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with serve_emulator() as e:
        yield e


@pytest.fixture
def client(emu: Emulator) -> EmuClient:
    return EmuClient(emu.url, emu.token)


@pytest.fixture
def kube(emu: Emulator) -> Client:
    """Our typed async client, from the emulator's kubeconfig."""
    return Client.from_kubeconfig(str(emu.kubeconfig_path))


async def blocking(fn: Callable[[], T]) -> T:
    """Run a blocking call (pykube-ng) in a worker thread."""
    return await trio.to_thread.run_sync(fn)


def pykube_api(emu: Emulator) -> pykube.HTTPClient:
    """A pykube-ng client from the emulator's kubeconfig."""
    return pykube.HTTPClient(pykube.KubeConfig.from_file(str(emu.kubeconfig_path)), timeout=(5, 30))


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    """A ConfigMap with no namespace (the request path gives it), ``labels`` and ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data,
    }


@dataclass
class Kubectl:
    binary: str
    env: dict[str, str]
    timeout: float = 60.0
    calls: list[list[str]] = field(default_factory=list)

    async def run(
        self, *args: str, check: bool = True, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        cmd = [self.binary, *args]
        self.calls.append(cmd)
        with trio.fail_after(self.timeout):
            proc = await trio.run_process(
                cmd,
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=self.env,
            )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {proc.returncode}\n"
                f"stdout: {proc.stdout.decode()}\nstderr: {proc.stderr.decode()}"
            )
        return proc

    async def out(self, *args: str) -> str:
        return (await self.run(*args)).stdout.decode()

    async def json(self, *args: str) -> Any:
        return msgspec.json.decode((await self.run(*args, "-o", "json")).stdout)

    async def apply(self, docs: Sequence[dict[str, Any]]) -> str:
        text = yaml.safe_dump_all(docs).encode()
        return (await self.run("apply", "-f", "-", stdin=text)).stdout.decode()


@pytest.fixture(scope="session")
def kubectl_binary() -> str:
    binary = find_kubectl()
    if binary is None:
        pytest.skip(
            "kubectl 1.33 not found: set $KUBECTL or install kubectl.1.33 beside the kubectl on "
            "PATH"
        )
    return binary


def kubectl_env(emu: Emulator, home: Path) -> dict[str, str]:
    """kubectl's environment: the emulator's kubeconfig, and a HOME and cache of its own."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(emu.kubeconfig_path),
        "KUBECACHEDIR": str(home / "kube-cache"),
    }


@pytest.fixture
def kubectl(kubectl_binary: str, emu: Emulator, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))


def kubectl_of(version: str, emu: Emulator, home: Path) -> Kubectl:
    """kubectl ``version`` (e.g. "1.27"): ``kubectl.<version>`` beside the real kubectl (the one
    on PATH is a gcloud dispatcher), with the ``kubectl`` fixture's environment; the test is
    skipped when that binary is missing."""
    which = shutil.which("kubectl")
    binary = Path(os.path.realpath(which)).parent / f"kubectl.{version}" if which else None
    if binary is None or not binary.exists():
        missing = f"kubectl.{version} not installed beside the kubectl on PATH"
        if os.environ.get("KUBETRIO_CI") == "1":
            pytest.fail(missing)  # CI installs every version it tests: never skip there
        pytest.skip(missing)
    return Kubectl(str(binary), kubectl_env(emu, home))
