"""``kubetrio emulator``: placeholder until the emulator lands (issue 3)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: pick one)")


def run(args: argparse.Namespace) -> int:
    raise SystemExit("kubetrio emulator: not built yet")
