"""``kubetrio run``: the manager with the enabled controllers, against a cluster or embedded."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import trio
from prometheus_client import CollectorRegistry

from kubetrio.cmd.clusters import (
    Endpoint,
    check_target,
    client_for,
    cluster_clients,
    embedded_conflict,
)
from kubetrio.cmd.config import (
    ConfigError,
    ManagerConfig,
    add_config_flags,
    load_config,
)
from kubetrio.cmd.demo import DEFAULT_MACHINES, EC2_CLUSTER, PROVIDERS
from kubetrio.cmd.embedded import (
    embedded_cluster,
    embedded_workdir,
    real_control_plane_cluster,
    with_services,
)
from kubetrio.cmd.endpoints import announce_endpoints, local_free_ports
from kubetrio.cmd.failures import ServerCheckFailed, describe_failure, expected_failure
from kubetrio.cmd.managers import lease_namespace, new_manager
from kubetrio.cmd.sharding import sharding_options
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.example import seed_demo
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager, process_registry
from kubetrio.runtime.manager.plugins import ControllerRegistry, PluginError
from kubetrio.runtime.util.log import configure_logging, get_logger

log = get_logger("kubetrio.run")


# The embedded cluster runs in its own session (a Ctrl-C must reach the manager first), so
# nothing stops it if this process dies: a closed terminal (SIGHUP) is a stop like Ctrl-C,
# which ends with the cluster stopped.
EMBEDDED_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_flags(parser)
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="start the embedded cluster (API emulator as a child process) and run against it",
    )
    parser.add_argument(
        "--embedded-dir",
        type=Path,
        default=None,
        help="where the embedded cluster keeps its kubeconfig, state and log (default: temp)",
    )
    demo = parser.add_argument_group(
        "embedded demo",
        "with --embedded, a scenario runs against the embedded cluster: a MachineDeployment is "
        "created, scaled up, rolled to a new class, loses a machine to a broken VM, gets a "
        "workload with volumes and is scaled down by half (drain included)",
    )
    demo.add_argument(
        "--machines",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"machines the demo's deployment scales up to; half go again at the end "
        f"(default: {DEFAULT_MACHINES})",
    )
    demo.add_argument(
        "--duration",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="stop the demo after this long (default: when the scenario finishes, at most "
        "3 minutes)",
    )
    demo.add_argument(
        "--provider",
        choices=PROVIDERS,
        default=None,
        help="the cloud the demo's machines live in: the simulated one (sim, the default) or "
        "an EC2 double (aws: moto's EC2 server started beside the cluster, driven by the aws "
        "driver; needs pip install 'kubetrio[aws]' 'moto[server]')",
    )
    demo.add_argument(
        "--control-plane",
        choices=("emulator", "real"),
        default="emulator",
        help="the API server under the demo: kubetrio's emulator (the default), or a real "
        "etcd, kube-apiserver and kube-controller-manager from KUBEBUILDER_ASSETS with "
        "kubetrio simulate beside them",
    )
    demo.add_argument(
        "--keep-running",
        action="store_true",
        help="after the demo, keep the cluster and the manager up for kubectl; Ctrl-C stops",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def fail(message: str, code: int = 1) -> int:
    print(f"kubetrio: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    if not args.embedded:
        demo_flags = {
            "--machines": args.machines is not None,
            "--duration": args.duration is not None,
            "--keep-running": args.keep_running,
            "--provider": args.provider is not None,
            "--control-plane": args.control_plane != "emulator",
        }
        given = [flag for flag, present in demo_flags.items() if present]
        if given:
            return fail(f"{', '.join(given)}: only with --embedded (the demo's options)", 2)
    if args.provider == "aws" and args.control_plane == "real":
        return fail("--provider aws: only with the emulator's control plane for now", 2)
    if args.provider == "aws":
        from kubetrio.sim.ec2.server import missing_packages

        if missing := missing_packages():
            packages = " ".join(f"'{package}'" for package in missing)
            return fail(f"--provider aws: needs boto3 and moto's server: pip install {packages}", 2)
    try:
        registry = ControllerRegistry(BUILTIN_CONTROLLERS)
        config = load_config(args, os.environ, registry.names())
    except (ConfigError, PluginError) as error:
        return fail(str(error), 2)
    if args.embedded and (conflict := embedded_conflict(config)) is not None:
        return fail(conflict, 2)
    configure_logging(config.logging.format, config.logging.level)
    controllers = list(config.controllers)
    # Groups holding Cancelled are BaseExceptionGroups: caught too, unwrapped when the rest is
    # anticipated (a KeyboardInterrupt in one is not, and goes on).
    try:
        return trio.run(serve, config, registry, controllers, args)
    except KeyboardInterrupt:
        # Ctrl-C before the manager's own signal handling is installed (while the start waits
        # for the API server): nothing has started, so nothing is left to stop.
        return fail("interrupted", 130)
    except (Exception, BaseExceptionGroup) as error:
        failure = expected_failure(error)
        if failure is None:
            raise
        return fail(describe_failure(failure, config))


def make_client(
    config: ManagerConfig,
    kubeconfig: str | None,
    registry: CollectorRegistry | None = None,
    component: str = "kubetrio",
) -> Client:
    """One client for both roles, from ``kubeconfig`` (the embedded cluster's) or the top-level
    settings; ``registry``: where its ``rest_client_*`` metrics go; ``component``: what ends
    its User-Agent (the manager's identity, for its client)."""
    return client_for(
        Endpoint(kubeconfig or config.kubeconfig, config.context, config.master),
        qps=config.control.qps or config.client.qps,
        burst=config.control.burst or config.client.burst,
        timeout=config.client.timeout,
        registry=registry,
        component=component,
    )


async def serve(
    config: ManagerConfig,
    registry: ControllerRegistry,
    controllers: list[str],
    args: argparse.Namespace,
) -> int:
    if not args.embedded:
        return await run_manager(config, registry, controllers, None)
    return await serve_embedded(config, registry, controllers, args)


async def serve_embedded(
    config: ManagerConfig,
    registry: ControllerRegistry,
    controllers: list[str],
    args: argparse.Namespace,
) -> int:
    """The embedded cluster in ``--embedded-dir``, else in a temporary folder removed on exit."""
    with embedded_workdir(args.embedded_dir) as workdir:
        if args.embedded_dir is None:
            print(
                f"embedded cluster in {workdir} (removed on exit; --embedded-dir keeps it)",
                flush=True,
            )
        return await serve_embedded_in(workdir, config, registry, controllers, args)


async def serve_embedded_in(
    workdir: Path,
    config: ManagerConfig,
    registry: ControllerRegistry,
    controllers: list[str],
    args: argparse.Namespace,
) -> int:
    """The embedded cluster, the manager against it, and the demo as the manager's companion
    (without the machine controller there is nothing to show: the manager runs alone)."""
    from kubetrio.cmd.demo.scenario import Demo, DemoOptions
    from kubetrio.cmd.demo.view import kubectl_hint
    from kubetrio.cmd.demo.webhooks import with_webhooks

    config = local_free_ports(config)
    if config.webhooks and config.webhook_bind_address == ":9443":
        config = msgspec.structs.replace(config, webhook_bind_address="127.0.0.1:0")
    live = sys.stdout.isatty()
    aws = args.provider == "aws"
    if args.control_plane == "real":
        await trio.Path(workdir).mkdir(parents=True, exist_ok=True)
        cluster_cm = real_control_plane_cluster(workdir)
    else:
        cluster_cm = embedded_cluster(workdir, ec2_cluster=EC2_CLUSTER if aws else None)
    async with cluster_cm as cluster:
        if cluster.ec2_url is not None:
            # The aws driver's boto3 clients go to the EC2 double, as boto3 resolves endpoints.
            os.environ["AWS_ENDPOINT_URL_EC2"] = cluster.ec2_url
        kubeconfig = str(cluster.kubeconfig)
        print(f"kubeconfig: {kubeconfig}", flush=True)
        print(f"  try: {kubectl_hint(kubeconfig)}", flush=True)
        if "example" in controllers:
            await seed_demo(make_client(config, kubeconfig))
        config = with_services(config, cluster)
        for name, url in (
            ("sim cloud", config.machine.sim_cloud_url),
            ("storage backend", config.storage.backend_url),
        ):
            if url is not None:
                print(f"{name}: {url}", flush=True)
        if "machine" not in controllers:
            print("the demo needs the machine controller: running the manager only", flush=True)
            return await run_manager(
                config,
                registry,
                controllers,
                kubeconfig,
                stop_signals=EMBEDDED_STOP_SIGNALS,
                announce=True,
            )
        demo = Demo(
            make_client(config, kubeconfig),
            DemoOptions(
                machines=args.machines or DEFAULT_MACHINES,
                duration=args.duration,
                keep_running=args.keep_running,
                live=live,
                storage_url=cluster.storage_url,
                cloud_url=config.machine.sim_cloud_url,
                # The embedded cluster runs the storage timeline at a tenth (see embedded.py),
                # so the deleted machines' storage nodes are seen removed within the minute.
                wait_for_storage=True,
                ec2_url=cluster.ec2_url,
            ),
            kubeconfig=kubeconfig,
        )
        companion: Callable[[Manager], Awaitable[int]] = demo.run
        if config.webhooks:
            companion = with_webhooks(demo.run, make_client(config, kubeconfig), controllers)
        if not live:
            return await run_manager(
                config,
                registry,
                controllers,
                kubeconfig,
                companion,
                demo.stopping,
                EMBEDDED_STOP_SIGNALS,
                announce=True,
            )
        # The live table owns the terminal: the manager's log lines go to a file instead.
        log_path = workdir / "manager.log"
        print(f"manager log: {log_path}", flush=True)
        with log_path.open("a") as log_file:
            configure_logging(config.logging.format, config.logging.level, stream=log_file)
            try:
                return await run_manager(
                    config,
                    registry,
                    controllers,
                    kubeconfig,
                    companion,
                    demo.stopping,
                    EMBEDDED_STOP_SIGNALS,
                    announce=True,
                )
            finally:
                configure_logging(config.logging.format, config.logging.level)


async def run_manager(
    config: ManagerConfig,
    registry: ControllerRegistry,
    controllers: list[str],
    kubeconfig: str | None,
    companion: Callable[[Manager], Awaitable[int]] | None = None,
    on_stopping: Callable[[], None] | None = None,
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT),
    announce: bool = False,
) -> int:
    """Run the manager until a signal, or until ``companion`` (the embedded demo) returns:
    then the manager stops gracefully and the companion's result is the exit code.
    ``on_stopping`` hears of the first signal (the demo says what is happening); ``announce``
    prints where metrics and probes answer (the embedded demo's free ports)."""
    metrics = process_registry()
    # The lease holder's name, and what ends the User-Agent: audit logs name the manager.
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    client, target = (
        cluster_clients(config, metrics, identity)
        if kubeconfig is None
        else (make_client(config, kubeconfig, metrics, identity), None)
    )
    try:  # unreachable or refused: one clear error now
        with trio.fail_after(config.client.timeout):
            await client.request("GET", "/version")
    except (ApiError, trio.TooSlowError) as error:
        raise ServerCheckFailed(error) from error
    if target is not None:
        await check_target(target, config.client.timeout)
    election = config.leader_election
    manager = new_manager(
        config,
        client,
        metrics,
        identity,
        lease_name=election.name,
        elect=election.enabled,
        workers=config.workers,
        sharding=sharding_options(config, lease_namespace(config)),
    )
    if target is not None:
        manager.add_cluster(TARGET, target)  # Nodes and what runs on them (controllers.clusters)
    for name in controllers:
        registry.setup(name)(manager, config)
        log.info("controller enabled", controller=name, origin=registry.origin(name))
    exit_code = 0
    companion_error: Exception | None = None
    with trio.open_signal_receiver(*stop_signals) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                async for signum in signals:
                    if manager_stopping.is_set():
                        log.warning("second signal, exiting now", signal=signum)
                        nursery.cancel_scope.cancel()
                        return
                    log.info("signal received, stopping", signal=signal.Signals(signum).name)
                    if on_stopping is not None:
                        on_stopping()
                    manager_stopping.set()
                    manager.stop()

            manager_stopping = trio.Event()
            nursery.start_soon(on_signals)
            if announce:
                nursery.start_soon(announce_endpoints, manager)
            if companion is not None:

                async def accompany() -> None:
                    nonlocal exit_code, companion_error
                    try:
                        exit_code = await companion(manager)
                    except Exception as error:  # reported after the manager stopped cleanly
                        companion_error = error
                    manager_stopping.set()
                    manager.stop()

                nursery.start_soon(accompany)
            await manager.run()
            nursery.cancel_scope.cancel()
    if companion_error is not None:
        raise companion_error
    return exit_code
