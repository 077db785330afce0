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


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not a flag), if it is one of ours."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in SUBCOMMANDS else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line, with the flags of the subcommand ``argv`` names.

    Only that subcommand's module is imported to add its flags: a process keeps what it imports,
    and ``kubetrio run`` has no use for the emulator's modules (tens of MiB). Without ``argv``,
    or when it names no known subcommand, every subcommand gets its flags.
    """
    parser = CommandParser(
        prog="kubetrio",
        description="Kubernetes controllers on trio: machine lifecycle (MCM), node drain, "
        "storage-node cleanup.",
    )
    parser.add_argument("--version", action="version", version=f"kubetrio {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = None if argv is None else chosen_command(argv)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        if only in (None, name):
            importlib.import_module(module_name).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help()
        return 0
    result: int = importlib.import_module(args._module).run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
