"""``kubetrio emulator`` as a standalone child process (the command users run), started until it
prints its kubeconfig, and the admin token it was given."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
import yaml


def admin_token(tmp_path: Path) -> str:
    """The admin's token from the kubeconfig ``_start`` had the emulator write."""
    config = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    return str(config["users"][0]["user"]["token"])


def announced(text: str) -> dict[str, str]:
    """The ``key=value`` words the emulator printed (``cloud-endpoint``, ``url``, ...)."""
    words = (word.partition("=") for word in text.split())
    return {key: value for key, sep, value in words if sep}


async def _start(tmp_path: Path, *extra: str) -> tuple[trio.Process, str]:
    proc, words = await start_announced(tmp_path, *extra)
    return proc, words["url"]


async def start_announced(tmp_path: Path, *extra: str) -> tuple[trio.Process, dict[str, str]]:
    """The emulator started, and what it announced up to its kubeconfig."""
    proc = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "kubetrio.cmd.main",
            "emulator",
            "--port",
            "0",
            "--kubeconfig-out",
            str(tmp_path / "kubeconfig"),
            *extra,
        ],
        stdout=-1,
    )
    assert proc.stdout is not None
    buf = b""
    with trio.fail_after(20):
        while b"kubeconfig=" not in buf:
            data = await proc.stdout.receive_some(4096)
            assert data, buf
            buf += data
    return proc, announced(buf.decode())
