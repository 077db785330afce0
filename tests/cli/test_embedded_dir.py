"""``kubetrio run --embedded`` leaves nothing behind in the temporary folder it made for the
cluster, whether it stops on Ctrl-C or fails; with ``--embedded-dir`` the folder is the user's
and keeps the kubeconfig, the state and the log."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

import pytest
import trio

from tests.helpers.running import run_until_started

pytestmark = [pytest.mark.process, pytest.mark.slow]

# The manager alone (no machine controller: no demo), ports the test cannot collide on.
MANAGER_ONLY = [
    "--controllers",
    "nodedelete",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--health-probe-bind-address",
    "0",
]


def command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "kubetrio.cmd.main", "run", "--embedded", *extra]


def environment(tmp: Path) -> dict[str, str]:
    """TMPDIR points at a folder of the test's own, so what is left in it is ours alone."""
    tmp.mkdir()
    return {**os.environ, "TMPDIR": str(tmp)}


async def test_the_temporary_folder_goes_on_ctrl_c(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    output = await run_until_started(
        command(*MANAGER_ONLY), env=environment(tmp), stop=signal.SIGINT
    )
    announced = next(line for line in output.splitlines() if line.startswith("embedded cluster in"))
    workdir = Path(announced.split()[3])
    assert workdir.parent == tmp and workdir.name.startswith("kubetrio-embedded-")
    assert f"kubeconfig: {workdir / 'kubeconfig'}" in output  # it was used, then removed
    assert list(tmp.iterdir()) == []


async def test_the_temporary_folder_goes_when_the_run_fails(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [*MANAGER_ONLY[:2], "--metrics-bind-address", f"127.0.0.1:{port}"]
        with trio.fail_after(90):
            result = await trio.run_process(
                command(*args, "--health-probe-bind-address", "0"),
                env=environment(tmp),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode != 0, output
    assert "kubeconfig:" in output  # the cluster had started, and its folder was made
    assert list(tmp.iterdir()) == []


async def test_an_embedded_dir_is_kept(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    kept = tmp_path / "cluster"
    args = command("--embedded-dir", str(kept), *MANAGER_ONLY)
    output = await run_until_started(args, env=environment(tmp), stop=signal.SIGINT)
    assert "embedded cluster in" not in output  # nothing to warn about: it is the user's
    assert {"kubeconfig", "state.json", "emulator.log"} <= {p.name for p in kept.iterdir()}
    assert list(tmp.iterdir()) == []
