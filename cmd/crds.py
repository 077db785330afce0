"""``kubetrio crds``: the machine CRDs as one YAML stream, so a cluster gets them with
``kubetrio crds | kubectl apply -f -`` from nothing but the installed wheel."""

from __future__ import annotations

import argparse

from kubetrio.cmd.assets import crd_documents, dump_documents
from kubetrio.cmd.output import write_stdout


def configure(parser: argparse.ArgumentParser) -> None:
    del parser  # no options: the CRDs are what the wheel ships


def run(args: argparse.Namespace) -> int:
    return write_stdout(dump_documents(crd_documents()))
