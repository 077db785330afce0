"""``kubetrio manifests``: the whole kit (CRDs, RBAC, the manager Deployment, its metrics
Service and ServiceMonitor) as ``kubectl kustomize config/default`` renders it, from the
installed wheel: ``kubetrio manifests | kubectl apply -f -`` deploys kubetrio without a checkout."""

from __future__ import annotations

import argparse

from kubetrio.cmd.assets import dump_documents, kit_documents
from kubetrio.cmd.output import write_stdout


def configure(parser: argparse.ArgumentParser) -> None:
    del parser  # no options: to change the kit, kustomize a copy of config/default


def run(args: argparse.Namespace) -> int:
    return write_stdout(dump_documents(kit_documents()))
