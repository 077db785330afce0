"""``kubetrio manifests``: the whole kit (CRDs, RBAC, the manager Deployment, its metrics
Service and ServiceMonitor) as ``kubectl kustomize config/default`` renders it, from the
installed wheel: ``kubetrio manifests --image REGISTRY/kubetrio:TAG | kubectl apply -f -``
deploys kubetrio without a checkout. The ServiceMonitor needs prometheus-operator's CRD;
``--no-servicemonitor`` leaves it out for clusters without the operator (kubectl would refuse
it there, after applying the rest). The webhooks' certificate needs cert-manager
(``config/certmanager``); ``--no-webhooks`` leaves out the webhook configurations, Service and
certificate, and the manager's webhook arguments, port and volume."""

from __future__ import annotations

import argparse
import sys

from kubetrio.cmd.assets import MANAGER_IMAGE, dump_documents, kit_documents
from kubetrio.cmd.kustomize import KustomizeError, image_override
from kubetrio.cmd.output import write_stdout
from kubetrio.cmd.webhooks import without_webhooks


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
    parser.add_argument(
        "--no-webhooks",
        action="store_true",
        help="serve no admission webhooks: leave out their configurations and certificate "
        "(for a cluster without cert-manager)",
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
    if args.no_webhooks:
        documents = without_webhooks(documents)
    return write_stdout(dump_documents(documents))
