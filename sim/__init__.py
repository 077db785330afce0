"""The simulated world around an API server: kubelets, scheduler, volume attach/detach, the
dynamic provisioner, workload, disruption and node lifecycle controllers (``cluster/``), the
simulated cloud the ``sim`` machine driver calls (``cloud/``) and the StorageOS-like storage
service (``storage/``).

Each part is an emulator extension: it is built from a served emulator and runs on the
emulator's trio clock; the cloud and the storage service answer HTTP on addresses of their own
(``kubetrio.sim.serving``), never through the API server's. ``serve_world`` is the emulator as
the machine controllers and the demo know it: the simulated cloud always there (idle until a VM
is created; ``emu.extension(SimulatedCloud).url``), the simulated cluster when asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from kubetrio.emulator import Emulator, ExtensionFactory, serve_emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.apiview import ApiObjects
from kubetrio.sim.cloud import CloudApi, SimulatedCloud
from kubetrio.sim.cluster import ClusterSimulation, SimulatedCluster
from kubetrio.sim.cluster.objects import Objects
from kubetrio.sim.serving import serve_api

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["cloud", "cluster", "serve_world"]


class ApiLink:
    """The simulated world's connection to the emulator it runs beside: the world reads and
    writes through the emulator's HTTP API, exactly as it would on any other API server."""

    def __init__(self, emu: Emulator, objects: ApiObjects) -> None:
        self.emu = emu
        self.objects = objects

    async def run(self) -> None:
        client = Client.from_url(self.emu.url, token=self.emu.token, qps=0, max_concurrency=64)
        await self.objects.run(client)


def cloud(objects: Objects) -> ExtensionFactory:
    """A factory of the simulated cloud (``serve_world`` serves its API) on ``objects``."""

    def build(emu: Emulator) -> SimulatedCloud:
        return SimulatedCloud(objects)

    return build


def cluster(objects: Objects, simulation: ClusterSimulation) -> ExtensionFactory:
    """A factory of the simulated cluster's behaviours, tuned by ``simulation``, on
    ``objects``."""

    def build(emu: Emulator) -> SimulatedCluster:
        return SimulatedCluster(objects, simulation)

    return build


@asynccontextmanager
async def serve_world(
    *,
    simulate: ClusterSimulation | None = None,
    extensions: Sequence[ExtensionFactory] = (),
    **emulator: Any,
) -> AsyncIterator[Emulator]:
    """``serve_emulator`` (``emulator`` are its keyword arguments) with the simulated cloud,
    its API on a loopback port of its own, and, given ``simulate``, the simulated cluster;
    ``emu.extension(SimulatedCloud)`` (its ``url`` the cloud's address) and
    ``emu.extension(SimulatedCluster)`` find them. ``extensions`` are served after those.

    The world is a client of the emulator's HTTP API, exactly as ``kubetrio simulate`` runs it
    beside any API server: it reads a watched mirror and writes through requests, never the
    emulator's store."""
    # The cloud alone follows Nodes only; the simulated cluster reads everything it acts on.
    link = ApiObjects() if simulate is not None else ApiObjects(resources=(ApiObjects.nodes,))
    world: list[ExtensionFactory] = [lambda emu: ApiLink(emu, link)]
    if simulate is not None:
        world.append(cluster(link, simulate))
    world += [cloud(link), *extensions]
    async with serve_emulator(extensions=world, **emulator) as emu, trio.open_nursery() as nursery:
        served = emu.extension(SimulatedCloud)
        served.url = await nursery.start(serve_api, CloudApi(served), "the simulated cloud")
        try:
            yield emu
        finally:
            nursery.cancel_scope.cancel()
