"""The ``kubetrio`` command line: one binary, one subcommand per job.

Subcommands import their implementation lazily so ``kubetrio --help`` stays fast and a broken
optional piece cannot stop the others from starting.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from kubetrio.cmd.argparser import CommandParser

# subcommand -> (module implementing it, one-line help). Each module has
# ``configure(parser)`` and ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "kubetrio.cmd.run",
        "run the manager and its controllers (--embedded: against a built-in cluster)",
    ),
    "emulator": (
        "kubetrio.cmd.emulator",
        "serve the embedded Kubernetes API emulator on 127.0.0.1",
    ),
    "simulate": (
        "kubetrio.cmd.simulate",
        "simulate nodes, pods, volumes, a cloud and a storage service beside any API server",
    ),
    "sharder": (
        "kubetrio.cmd.sharder",
        "run the sharder of kubetrio run --sharding's replicas in a process of its own",
    ),
    "rbac": (
        "kubetrio.cmd.rbac",
        "print (or --write) the RBAC roles the enabled controllers need",
    ),
    "webhooks": (
        "kubetrio.cmd.webhooks",
        "webhooks manifest: print (or --write) the controllers' webhook configurations",
    ),
    "crds": ("kubetrio.cmd.crds", "print the machine CRDs (kubetrio crds | kubectl apply -f -)"),
    "crd": ("kubetrio.cmd.crd", "generate CRDs from declared kinds (crd generate module:Class)"),
    "manifests": (
        "kubetrio.cmd.manifests",
        "print the deployment kit, as kubectl kustomize config/default renders it",
    ),
}


def package_version() -> str:
    try:
        return version("kubetrio")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="kubetrio",
        description="Kubernetes controllers on trio: machine lifecycle (MCM), node drain, "
        "storage-node cleanup.",
    )
    parser.add_argument("--version", action="version", version=f"kubetrio {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        importlib.import_module(module_name).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    result: int = importlib.import_module(args._module).run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
