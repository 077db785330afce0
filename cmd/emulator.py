"""``kubetrio emulator``: serve the Kubernetes API emulator on 127.0.0.1 until SIGINT/SIGTERM,
with the simulated cloud (and, asked for, the storage service) each on a loopback port of its
own. Once everything listens it announces on standard output, one ``key=value`` a line:
``ec2-endpoint=`` (when asked), ``cloud-endpoint=`` (the ``sim`` driver's ``--sim-cloud-url``),
``storage-backend=`` (``--storage-backend-url``), then the API server's ``url=`` and
``kubeconfig=``."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys
from pathlib import Path

import trio


def configure(parser: argparse.ArgumentParser) -> None:
    from kubetrio.emulator.gaps import plain_text

    parser.epilog = plain_text()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: pick one)")
    parser.add_argument(
        "--kubeconfig-out",
        type=Path,
        default=None,
        help="write a kubeconfig for kubectl/pykube here (default: a temporary file)",
    )
    parser.add_argument(
        "--state", type=Path, default=None, help="persist the store to FILE and restore it on start"
    )
    parser.add_argument(
        "--token",
        default=None,
        help=(
            "the admin's bearer token (user kubernetes-admin in system:masters, written to the "
            "kubeconfig); default: a random one"
        ),
    )
    parser.add_argument(
        "--authorization-mode",
        choices=("RBAC", "AlwaysAllow"),
        default="RBAC",
        help=(
            "RBAC (default): requests may do what Roles and bindings grant; AlwaysAllow: "
            "anything (tokens are still checked)"
        ),
    )
    parser.add_argument(
        "--no-rbac",
        dest="authorization_mode",
        action="store_const",
        const="AlwaysAllow",
        help="same as --authorization-mode=AlwaysAllow",
    )
    parser.add_argument(
        "--watch-window",
        type=int,
        default=10_000,
        help="watch history kept per resource; older resourceVersions get 410 Gone",
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks"
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help=(
            "run a simulated cluster behind the API: kubelets (nodes get Ready unless annotated "
            "sim.kubetrio.io/never-ready=true; pods start 1 s after their volumes attach; "
            "termination takes 0.1 x the grace period; mirror pods are posted again), a "
            "scheduler, CSI attach/detach with VolumeAttachments (attach 2 s, detach 3 s), "
            "a provisioner (driver sim.csi.kubetrio.io) for claims of class '', standard or "
            "sim-csi, Deployment/ReplicaSet/StatefulSet/DaemonSet controllers, "
            "PodDisruptionBudget status, and the cordon taint; implies --storage-sim"
        ),
    )
    parser.add_argument(
        "--storage-sim",
        action="store_true",
        help=(
            "serve the simulated storage service on a loopback port of its own, announced as "
            "storage-backend=<url> (the URL for --storage-backend-url): StorageOS-like, it "
            "registers a storage node for every Ready Node (annotating "
            "csi.volume.kubernetes.io/nodeid with csi.storageos.com), marks it offline 20-30 s "
            "after its Node is gone or not Ready, lets its lock expire 30 s later, and refuses "
            "deletes before that (409 online, 423 locked) or while it masters a volume without "
            "replicas (409); in memory only"
        ),
    )
    parser.add_argument(
        "--storage-timeline-scale",
        type=_positive_float,
        default=1.0,
        metavar="FACTOR",
        help=(
            "multiply the simulated storage service's offline and lock delays (0.1: offline "
            "after 2-3 s, lock expired 3 s later — what the embedded demo uses to fit a minute)"
        ),
    )

    parser.add_argument(
        "--ec2-cluster",
        default=None,
        metavar="NAME",
        help=(
            "also serve an EC2 double (moto's server, on its own loopback port, announced as "
            "ec2-endpoint=<url>) and play the kubelet of each of its instances tagged "
            "kubernetes.io/cluster/NAME: a running one registers its Node (private DNS name, "
            "providerID aws:///<zone>/<id>) and is Ready, a stopped one Unknown, a terminated "
            "one's Node is removed; needs pip install 'kubetrio[aws]' 'moto[server]'"
        ),
    )
    parser.add_argument(
        "--ec2-heartbeat",
        type=_positive_float,
        default=20.0,
        metavar="SECONDS",
        help="how often the EC2 instances' kubelets look at their instances (with --ec2-cluster)",
    )
    parser.add_argument(
        "--audit-log-path",
        type=Path,
        default=None,
        metavar="FILE",
        help=(
            "append an audit.k8s.io/v1 Event JSON line per request to FILE ('-': standard "
            "output), as kube-apiserver does with a policy of level Metadata for everything: "
            "stage ResponseComplete, user, userAgent, verb, objectRef, response code, times; "
            "a client's Audit-ID header is kept as the auditID"
        ),
    )
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help=(
            "stop when standard input reaches end of file: a parent that holds the other end "
            "of a pipe takes the emulator with it even when it is killed outright"
        ),
    )


async def _stdin_closed() -> None:
    """Returns once standard input is at end of file (its writer is gone)."""
    stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    async with stream:
        while await stream.receive_some():
            pass


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text!r}")
    return value


async def _serve(args: argparse.Namespace) -> None:
    from kubetrio.emulator import EmulatorOptions, ExtensionFactory
    from kubetrio.runtime.manager.gctuning import GcTuning
    from kubetrio.sim import serve_world
    from kubetrio.sim.cloud import SimulatedCloud
    from kubetrio.sim.cluster import ClusterSimulation

    options = EmulatorOptions(
        port=args.port,
        token=args.token,
        state_path=args.state,
        kubeconfig_path=args.kubeconfig_out,
        window=args.watch_window,
        bookmark_interval=args.bookmark_interval,
        rbac=args.authorization_mode == "RBAC",
        audit_log_path=args.audit_log_path,
    )
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        simulate = ClusterSimulation.realistic() if args.simulate else None
        async with contextlib.AsyncExitStack() as stack:
            extensions: list[ExtensionFactory] = []
            if args.ec2_cluster is not None:
                from kubetrio.sim.ec2 import ec2_kubelets, moto_server

                ec2_url = stack.enter_context(moto_server())
                extensions.append(ec2_kubelets(ec2_url, args.ec2_cluster, args.ec2_heartbeat))
                print(f"ec2-endpoint={ec2_url}", flush=True)
            tuning = GcTuning("tuned")
            tuning.start()
            world = serve_world(options=options, simulate=simulate, extensions=extensions)
            emu = await stack.enter_async_context(world)
            tuning.synced()
            print(f"cloud-endpoint={emu.extension(SimulatedCloud).url}", flush=True)
            if args.storage_sim or args.simulate:  # served before the URL is announced
                from kubetrio.sim.storage import serve_storage_sim

                scale = args.storage_timeline_scale
                storage = await stack.enter_async_context(
                    serve_storage_sim(
                        emu, offline_after=(20.0 * scale, 30.0 * scale), lock_seconds=30.0 * scale
                    )
                )
                print(f"storage-backend={storage.url}", flush=True)
            print(f"kubetrio emulator serving url={emu.url}", flush=True)
            print(f"kubeconfig={emu.kubeconfig_path}", flush=True)
            async with trio.open_nursery() as nursery:
                if args.exit_with_parent:

                    async def parent_gone() -> None:
                        await _stdin_closed()
                        logging.getLogger(__name__).info("stopping: the parent is gone")
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(parent_gone)
                async for signum in signals:
                    logging.getLogger(__name__).info("stopping signal=%s", signum)
                    break
                nursery.cancel_scope.cancel()


def run(args: argparse.Namespace) -> int:
    if args.ec2_cluster is not None:
        from kubetrio.sim.ec2 import missing_packages

        if missing := missing_packages():
            packages = " ".join(f"'{package}'" for package in missing)
            print(f"kubetrio: --ec2-cluster: needs pip install {packages}", file=sys.stderr)
            return 2
    audit = args.audit_log_path
    if audit is not None and str(audit) != "-":
        try:
            audit.open("a").close()
        except OSError as error:
            print(f"kubetrio: --audit-log-path {audit}: {error.strerror}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        trio.run(_serve, args)
    except (OSError, BaseExceptionGroup) as error:
        from kubetrio.cmd.failures import expected_failure

        taken = expected_failure(error, (OSError,))
        if not isinstance(taken, OSError) or taken.errno != errno.EADDRINUSE:
            raise
        print(
            f"kubetrio emulator: cannot listen on 127.0.0.1:{args.port}: {taken.strerror}; "
            "free the port or choose another with --port (0 picks a free one)",
            file=sys.stderr,
        )
        return 1
    return 0
