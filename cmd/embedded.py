"""The embedded cluster: the emulator as a child process, so the manager talks HTTP to it
exactly as to a real cluster and holds no simulated state of its own."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

STARTUP_TIMEOUT = 30.0


class EmbeddedClusterError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class EmbeddedCluster:
    url: str
    kubeconfig: Path


@asynccontextmanager
async def embedded_cluster(workdir: Path) -> AsyncIterator[EmbeddedCluster]:
    """Start ``kubetrio emulator`` with its state in ``workdir``; stop it on exit."""
    await trio.Path(workdir).mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    command = [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "emulator",
        "--kubeconfig-out",
        str(kubeconfig),
        "--state",
        str(workdir / "state.json"),
    ]
    log_file = (workdir / "emulator.log").open("wb")
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                command,
                stdout=subprocess.PIPE,
                stderr=log_file,
                check=False,
                # Its own session: a Ctrl-C meant for the manager must not stop the cluster
                # under it before the manager has shut down gracefully.
                start_new_session=True,
            )
        )
        try:
            url = await _read_url(process)
            yield EmbeddedCluster(url, kubeconfig)
        finally:
            process.terminate()
            with trio.move_on_after(5) as scope:
                scope.shield = True
                await process.wait()
            if process.returncode is None:
                process.kill()
            log_file.close()


async def _read_url(process: trio.Process) -> str:
    """The URL the emulator announces on stdout once it listens."""
    assert process.stdout is not None
    buffer = b""
    with trio.move_on_after(STARTUP_TIMEOUT):
        async for chunk in process.stdout:
            buffer += chunk
            for line in buffer.decode(errors="replace").splitlines():
                if "url=" in line:
                    return line.split("url=", 1)[1].split()[0]
    raise EmbeddedClusterError(
        f"the embedded API server did not start within {STARTUP_TIMEOUT:g}s "
        f"(exit code {process.returncode}); see emulator.log"
    )
