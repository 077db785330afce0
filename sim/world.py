"""The simulated world on any API server: one mirror of the cluster (``ApiObjects``) shared by
the simulated cluster's controllers, the simulated cloud and the storage service, all acting
through the server's API only.

``simulated_world(client, simulate=ClusterSimulation())`` runs it for the block; the embedded
emulator, the test kit's real control plane and ``kubetrio simulate`` all build it this way, so
what runs beside our emulator is exactly what runs beside a real kube-apiserver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from kubetrio.runtime.client.typed import Client
from kubetrio.sim.apiview import ApiObjects
from kubetrio.sim.cloud.service import SimulatedCloud
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.simulation import SimulatedCluster


@dataclass
class World:
    """The parts of a running simulated world (``cluster`` only when asked for)."""

    objects: ApiObjects
    cloud: SimulatedCloud
    cluster: SimulatedCluster | None = None
    parts: list[Any] = field(default_factory=list)


def build_world(simulate: ClusterSimulation | None) -> World:
    """The world's parts, not yet running (``run_world`` runs them)."""
    objects = ApiObjects() if simulate is not None else ApiObjects(resources=(ApiObjects.nodes,))
    cloud = SimulatedCloud(objects)
    cluster = SimulatedCluster(objects, simulate) if simulate is not None else None
    parts: list[Any] = [cloud] if cluster is None else [cluster, cloud]
    return World(objects, cloud, cluster, parts)


async def run_world(world: World, client: Client) -> None:
    """Until cancelled: the mirror first, then every part once it reads a complete cluster."""
    async with trio.open_nursery() as nursery:
        await nursery.start(world.objects.run, client)
        for part in world.parts:
            nursery.start_soon(part.run)


@asynccontextmanager
async def simulated_world(
    client: Client, *, simulate: ClusterSimulation | None = None
) -> AsyncIterator[World]:
    """The world on ``client``'s server for the block; its mirror is complete on entry."""
    world = build_world(simulate)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_world, world, client)
        await world.objects.ready()
        try:
            yield world
        finally:
            nursery.cancel_scope.cancel()
