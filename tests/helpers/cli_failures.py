"""A ``kubetrio run`` that is expected to fail: run to its exit, quiet and without ports, and the
one line it ends with (the line an operator reads)."""

from __future__ import annotations

from pathlib import Path

import trio

from tests.helpers.cli import environment

QUIET = ["--log-level", "error"]  # stderr then holds only what the process ends with
NO_PORTS = ["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]


async def run_to_exit(argv: list[str], plugins: Path | None = None) -> tuple[int, str]:
    with trio.fail_after(60):
        proc = await trio.run_process(
            argv,
            capture_stderr=True,
            capture_stdout=True,
            check=False,
            env=environment(plugins),
        )
    return proc.returncode, proc.stderr.decode()


def the_line(stderr: str) -> str:
    """The one line the process ended with: no traceback, no exception group."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    assert lines[0].startswith(("kubetrio: ", "kubetrio emulator: ")), stderr
    return lines[0]
