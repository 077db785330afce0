"""``kubetrio sharder``: the ring's sharder alone, in a process of its own.

By default the sharder runs on the leader among the ``kubetrio run --sharding`` replicas. Run
it apart (with ``sharding.runSharder: false`` on the replicas) to keep its metadata cache and
its label writes off the replicas that reconcile. It takes the same configuration as ``run``:
the enabled controllers tell it which kinds the ring holds (they are set up, never run), the
``sharding`` section which ring. Its replicas elect a leader on a Lease of their own, the
leader election's name with ``-sharder`` added; only the leader assigns, while every replica
serves the assigning webhook (``sharding.webhook``).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import uuid

import trio

from kubetrio.cmd.clusters import cluster_clients
from kubetrio.cmd.config import ConfigError, ManagerConfig, add_config_flags, load_config
from kubetrio.cmd.failures import describe_failure, expected_failure
from kubetrio.cmd.managers import lease_namespace, new_manager
from kubetrio.cmd.sharding import sharded_kinds, sharding_options
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.runtime.manager.manager import process_registry
from kubetrio.runtime.manager.plugins import ControllerRegistry, PluginError
from kubetrio.runtime.util.log import configure_logging, get_logger

log = get_logger("kubetrio.sharder")

SUFFIX = "-sharder"


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_flags(parser)


def fail(message: str, code: int = 1) -> int:
    print(f"kubetrio sharder: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    try:
        registry = ControllerRegistry(BUILTIN_CONTROLLERS)
        config = load_config(args, os.environ, registry.names())
    except (ConfigError, PluginError) as error:
        return fail(str(error), 2)
    if not config.sharding.enabled:
        return fail(
            "sharding.enabled (--sharding) is off: the sharder needs the replicas' sharding "
            "settings (and --leader-elect, as they have)",
            2,
        )
    configure_logging(config.logging.format, config.logging.level)
    try:
        return trio.run(serve, config, registry)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except (Exception, BaseExceptionGroup) as error:
        failure = expected_failure(error)
        if failure is None:
            raise
        return fail(describe_failure(failure, config))


async def serve(config: ManagerConfig, registry: ControllerRegistry) -> int:
    metrics = process_registry()
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    client, _target = cluster_clients(config, metrics, identity)
    namespace = lease_namespace(config)
    options = sharding_options(config, namespace, sharder=True)
    assert options is not None
    kinds = sharded_kinds(registry, config)
    if not kinds:
        log.error("no enabled controller shards: nothing to assign", controllers=config.controllers)
        return 2
    manager = new_manager(
        config,
        client,
        metrics,
        identity,
        lease_name=f"{config.leader_election.name}{SUFFIX}",
        elect=True,
    )
    manager.add_sharder(options, kinds)
    log.info("sharder", ring=options.ring, namespace=options.namespace)
    await manager.run()
    return 0
