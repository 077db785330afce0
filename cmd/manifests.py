"""``kubetrio manifests``: the whole kit (CRDs, RBAC, the manager Deployment, its metrics
Service and ServiceMonitor) as ``kubectl kustomize config/default`` renders it, from the
installed wheel: ``kubetrio manifests --image REGISTRY/kubetrio:TAG | kubectl apply -f -``
deploys kubetrio without a checkout. The ServiceMonitor needs prometheus-operator's CRD;
``--no-servicemonitor`` leaves it out for clusters without the operator (kubectl would refuse
it there, after applying the rest)."""

from __future__ import annotations

import argparse
import sys

from kubetrio.cmd.assets import MANAGER_IMAGE, dump_documents, kit_documents
from kubetrio.cmd.kustomize import KustomizeError, image_override
from kubetrio.cmd.output import write_stdout


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image",
        metavar="REFERENCE",
        default=None,
        help=f"the manager's image, NAME[:TAG][@DIGEST] (default: {MANAGER_IMAGE}:latest, "
        "what `docker build -t kubetrio .` tags); as kustomize edit set image does",
    )
    parser.add_argument(
        "--no-servicemonitor",
        action="store_true",
        help="leave out the ServiceMonitor (for a cluster without prometheus-operator)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        images = [] if args.image is None else [image_override(MANAGER_IMAGE, args.image)]
    except KustomizeError as error:
        print(f"kubetrio: --image: {error}", file=sys.stderr)
        return 2
    documents = kit_documents(images)
    if args.no_servicemonitor:
        documents = [doc for doc in documents if doc.get("kind") != "ServiceMonitor"]
    return write_stdout(dump_documents(documents))
