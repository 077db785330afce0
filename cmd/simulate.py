"""``kubetrio simulate``: the simulated world beside any API server, KWOK-style.

Nodes that register and stay Ready, pods that are scheduled, start and terminate, volumes that
are provisioned and attached, the workload controllers a bare control plane lacks, and the
simulated cloud and storage service that the ``sim`` machine driver and the storage-node
controllers talk to, each on an address of its own. Everything it does to the cluster goes
through the API server, as a kubelet's or a scheduler's writes do, so the machine controllers
can be tried on kind, minikube or a real control plane without a cloud::

    kubetrio simulate --kubeconfig ~/.kube/config --controllers '*,-replicasets,-deployments'

It prints ``cloud-endpoint=URL`` and (with ``--storage``) ``storage-backend=URL``, then one
``kubetrio simulate running`` line; a manager takes those as ``--sim-cloud-url`` and
``--storage-backend-url``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import signal
import sys
from typing import Any

import trio

# Names as kube-controller-manager's --controllers spells its own (the simulated kubelets and
# scheduler besides), and the ClusterSimulation switch each one is.
BEHAVIOURS: dict[str, str] = {
    "kubelet": "kubelet",
    "scheduler": "scheduler",
    "attach-detach": "attach_detach",
    "provisioner": "provisioner",
    "replicasets": "replicasets",
    "statefulsets": "statefulsets",
    "daemonsets": "daemonsets",
    "deployments": "deployments",
    "disruption": "disruption",
    "node-lifecycle": "node_lifecycle",
    "in-place-update-agent": "in_place_update_agent",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", default=None, help="the cluster's kubeconfig (default: $KUBECONFIG)"
    )
    parser.add_argument("--context", default=None, help="the kubeconfig context to use")
    parser.add_argument(
        "--controllers",
        type=behaviours,
        default=behaviours("*"),
        help=(
            "the simulated behaviours to run, as kube-controller-manager's --controllers: "
            "'*' for all, 'name' to add, '-name' to leave out (leave out what the cluster "
            f"already runs, e.g. '*,-replicasets,-deployments'); names: {', '.join(BEHAVIOURS)}"
        ),
    )
    parser.add_argument(
        "--storage", action="store_true", help="also serve the simulated storage service"
    )
    parser.add_argument(
        "--storage-timeline-scale",
        type=float,
        default=1.0,
        help="scale the storage service's StorageOS timeline (a node offline 20-30 s after its "
        "Kubernetes Node goes, its lock 30 s later); 0.1: ten times as fast",
    )
    parser.add_argument(
        "--cloud-port", type=int, default=0, help="the cloud's port on 127.0.0.1 (0: pick one)"
    )
    parser.add_argument(
        "--storage-port",
        type=int,
        default=0,
        help="the storage service's port on 127.0.0.1 (0: pick one)",
    )
    parser.add_argument(
        "--fast",
        action="store_true",
        help="no simulated delays (pods start, volumes attach and grace periods end at once)",
    )
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when standard input reaches end of file (a parent holding the pipe's other "
        "end takes the simulation with it)",
    )


def behaviours(text: str) -> frozenset[str]:
    """``*``, names and ``-names``, comma-separated, into the set of behaviours to run."""
    chosen: set[str] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "*":
            chosen |= set(BEHAVIOURS)
            continue
        name = item.removeprefix("-")
        if name not in BEHAVIOURS:
            raise argparse.ArgumentTypeError(
                f"unknown behaviour {name!r}; known: {', '.join(BEHAVIOURS)}"
            )
        if item.startswith("-"):
            chosen.discard(name)
        else:
            chosen.add(name)
    return frozenset(chosen)


def simulation(args: argparse.Namespace) -> Any:
    from kubetrio.sim.cluster import ClusterSimulation

    base = ClusterSimulation() if args.fast else ClusterSimulation.realistic()
    switches: dict[str, Any] = {f: name in args.controllers for name, f in BEHAVIOURS.items()}
    return dataclasses.replace(base, **switches)


async def _simulate(args: argparse.Namespace, client: Any) -> None:
    from kubetrio.cmd.emulator import _stdin_closed
    from kubetrio.runtime.manager.gctuning import GcTuning
    from kubetrio.sim.cloud import CloudApi
    from kubetrio.sim.serving import serve_api
    from kubetrio.sim.storage import SimulatedStorage, StorageApi
    from kubetrio.sim.storage.api import VERSION
    from kubetrio.sim.world import build_world, run_world

    # The mirror is dicts, which the collector tracks: with CPython's defaults a third of the
    # simulation's CPU went to collections walking it again and again (tests/bench/simulate.py).
    tuning = GcTuning("tuned")
    tuning.start()
    world = build_world(simulation(args) if args.controllers else None)
    if args.storage:
        scale = args.storage_timeline_scale
        world.parts.append(
            SimulatedStorage(
                world.objects, offline_after=(20.0 * scale, 30.0 * scale), lock_seconds=30.0 * scale
            )
        )
    log = logging.getLogger("kubetrio.simulate")
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            cloud_url = await nursery.start(
                lambda task_status: serve_api(
                    CloudApi(world.cloud),
                    "the simulated cloud",
                    port=args.cloud_port,
                    task_status=task_status,
                )
            )
            world.cloud.url = cloud_url
            print(f"cloud-endpoint={cloud_url}", flush=True)
            if args.storage:
                storage = world.parts[-1]
                address = await nursery.start(
                    lambda task_status: serve_api(
                        StorageApi(storage),
                        "the simulated storage",
                        port=args.storage_port,
                        task_status=task_status,
                    )
                )
                storage.url = f"{address}/{VERSION}"
                print(f"storage-backend={storage.url}", flush=True)
            nursery.start_soon(run_world, world, client)
            await world.objects.ready()
            tuning.synced()
            print(
                f"kubetrio simulate running server={client.base_url} "
                f"behaviours={','.join(sorted(args.controllers)) or 'none'}",
                flush=True,
            )
            if args.exit_with_parent:

                async def parent_gone() -> None:
                    await _stdin_closed()
                    log.info("stopping: the parent is gone")
                    nursery.cancel_scope.cancel()

                nursery.start_soon(parent_gone)
            async for signum in signals:
                log.info("stopping signal=%s", signum)
                break
            nursery.cancel_scope.cancel()


def run(args: argparse.Namespace) -> int:
    from kubetrio.runtime.client.kubeconfig import KubeconfigError
    from kubetrio.runtime.client.typed import Client

    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        client = Client.from_kubeconfig(args.kubeconfig, args.context, qps=0, max_concurrency=64)
    except KubeconfigError as error:
        print(f"kubetrio simulate: {error}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(_simulate, args, client)
    return 0
