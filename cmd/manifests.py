"""``kubetrio manifests``: the whole kit (CRDs, RBAC, the manager Deployment, its metrics
Service and ServiceMonitor) as ``kubectl kustomize config/default`` renders it, from the
installed wheel: ``kubetrio manifests --image REGISTRY/kubetrio:TAG | kubectl apply -f -``
deploys kubetrio without a checkout.

The ServiceMonitor needs prometheus-operator's CRD; ``--no-servicemonitor`` leaves it out for
clusters without the operator (kubectl would refuse it there, after applying the rest). The
admission webhooks are opt-in: ``--webhooks`` renders ``config/with-webhooks``, whose
certificate needs cert-manager. A webhook configuration registered without a server able to
start would refuse every write of its kinds, so a kit applied to a cluster without cert-manager
must not hold one. ``--sharding N`` runs N replicas sharing the machine controllers' objects
(``kubetrio.cmd.shardingkit``). ``--controllers LIST`` makes the kit run those controllers, an
installed package's included (``kubetrio.cmd.controllerkit``). ``--check`` prints nothing to
apply: it asks the cluster of a kubeconfig what it lacks for these manifests
(``kubetrio.cmd.preflight``).
"""

from __future__ import annotations

import argparse
import sys

from kubetrio.cmd.assets import MANAGER_IMAGE, dump_documents, kit_documents
from kubetrio.cmd.config import DEFAULT_CONTROLLERS
from kubetrio.cmd.controllerkit import for_controllers
from kubetrio.cmd.kustomize import Document, KustomizeError, image_override
from kubetrio.cmd.output import write_stdout
from kubetrio.cmd.shardingkit import with_sharding
from kubetrio.runtime.gen.crd import CrdError
from kubetrio.runtime.manager.plugins import PluginError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image",
        metavar="REFERENCE",
        default=None,
        help=f"the manager's image, NAME[:TAG][@DIGEST] (default: {MANAGER_IMAGE}:latest, "
        "what `docker build -t kubetrio .` tags); as kustomize edit set image does",
    )
    parser.add_argument(
        "--controllers",
        metavar="LIST",
        default=None,
        help="run these controllers, comma-separated, an installed package's included: their "
        "CRDs, their roles and (with --webhooks) their webhook configurations replace the "
        "built-in ones (default: the kit as shipped)",
    )
    parser.add_argument(
        "--no-servicemonitor",
        action="store_true",
        help="leave out the ServiceMonitor (for a cluster without prometheus-operator)",
    )
    parser.add_argument(
        "--webhooks",
        action="store_true",
        help="serve the admission webhooks: config/with-webhooks, whose certificate needs "
        "cert-manager",
    )
    parser.add_argument(
        "--sharding",
        type=int,
        metavar="REPLICAS",
        default=None,
        help="run REPLICAS replicas of kubetrio run --sharding (the machine controllers' "
        "objects spread over them), with the roles sharding needs",
    )
    parser.add_argument(
        "--sharding-webhook",
        action="store_true",
        help="with --sharding and --webhooks: assign new objects to shards at creation "
        "(a MutatingWebhookConfiguration served by the managers)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="print nothing to apply: say, one line each, what the cluster of --kubeconfig "
        "lacks for these manifests (API versions, CRDs such as cert-manager's, permissions); "
        "exit 1 if anything",
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="with --check: the cluster to check (default: $KUBECONFIG, then ~/.kube/config)",
    )
    parser.add_argument("--context", default=None, help="with --check: the kubeconfig context")


def documents(args: argparse.Namespace) -> list[Document]:
    """The manifests the arguments ask for. Raises ``KustomizeError`` for a bad ``--image``,
    ``PluginError`` or ``CrdError`` for controllers that cannot be deployed."""
    try:
        images = [] if args.image is None else [image_override(MANAGER_IMAGE, args.image)]
    except KustomizeError as error:
        raise KustomizeError(f"--image: {error}") from None
    docs = kit_documents(images, "with-webhooks" if args.webhooks else "default")
    if args.controllers is not None:
        names = [name.strip() for name in args.controllers.split(",") if name.strip()]
        docs = for_controllers(docs, names, with_webhooks=args.webhooks)
    if args.sharding is not None:
        if args.sharding < 1:
            raise PluginError(f"--sharding: expected at least 1 replica, got {args.sharding}")
        if args.sharding_webhook and not args.webhooks:
            raise PluginError(
                "--sharding-webhook: only with --webhooks (its certificate comes with "
                "config/with-webhooks)"
            )
        names = (
            list(DEFAULT_CONTROLLERS)
            if args.controllers is None
            else [name.strip() for name in args.controllers.split(",") if name.strip()]
        )
        docs = with_sharding(docs, names, args.sharding, webhook=args.sharding_webhook)
    elif args.sharding_webhook:
        raise PluginError("--sharding-webhook: only with --sharding")
    if args.no_servicemonitor:
        docs = [doc for doc in docs if doc.get("kind") != "ServiceMonitor"]
    return docs


def run(args: argparse.Namespace) -> int:
    for flag, value in (("--kubeconfig", args.kubeconfig), ("--context", args.context)):
        if value is not None and not args.check:
            print(
                f"kubetrio: {flag}: only with --check (the manifests name no cluster)",
                file=sys.stderr,
            )
            return 2
    try:
        docs = documents(args)
    except (KustomizeError, PluginError, CrdError) as error:
        print(f"kubetrio: {error}", file=sys.stderr)
        return 2
    if args.check:
        from kubetrio.cmd.preflight import check

        return check(docs, args.kubeconfig, args.context)
    return write_stdout(dump_documents(docs))
