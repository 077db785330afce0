"""The simulated world around an API server: kubelets, scheduler, volume attach/detach, the
dynamic provisioner, workload, disruption and node lifecycle controllers (``cluster/``), the
simulated cloud the ``sim`` machine driver calls (``cloud/``) and the StorageOS-like storage
service (``storage/``).

Each part is an emulator extension: it is built from a served emulator, mounts its own HTTP
API on the emulator's port and runs on the emulator's trio clock. ``serve_world`` is the
emulator as the machine controllers and the demo know it: the simulated cloud always there
(idle until a VM is created), the simulated cluster when asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from kubetrio.emulator import Emulator, ExtensionFactory, serve_emulator
from kubetrio.sim.cloud import PREFIX as CLOUD_PREFIX
from kubetrio.sim.cloud import CloudApi, SimulatedCloud
from kubetrio.sim.cluster import ClusterSimulation, SimulatedCluster
from kubetrio.sim.cluster.storeobjects import StoreObjects

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["cloud", "cluster", "serve_world"]


def cloud(emu: Emulator) -> SimulatedCloud:
    """The simulated cloud, served at ``/_cloud/v1`` on ``emu``'s port."""
    service = SimulatedCloud(StoreObjects(emu.store))
    emu.mount(CLOUD_PREFIX, CloudApi(service))
    return service


def cluster(simulation: ClusterSimulation) -> ExtensionFactory:
    """A factory of the simulated cluster's behaviours, tuned by ``simulation``, on an
    emulator."""

    def build(emu: Emulator) -> SimulatedCluster:
        return SimulatedCluster(StoreObjects(emu.store), simulation)

    return build


@asynccontextmanager
async def serve_world(
    *,
    simulate: ClusterSimulation | None = None,
    extensions: Sequence[ExtensionFactory] = (),
    **emulator: Any,
) -> AsyncIterator[Emulator]:
    """``serve_emulator`` (``emulator`` are its keyword arguments) with the simulated cloud
    and, given ``simulate``, the simulated cluster; ``emu.extension(SimulatedCloud)`` and
    ``emu.extension(SimulatedCluster)`` find them. ``extensions`` are served after those."""
    world: list[ExtensionFactory] = [cluster(simulate)] if simulate is not None else []
    world += [cloud, *extensions]
    async with serve_emulator(extensions=world, **emulator) as emu:
        yield emu
