"""The simulated storage service, so the storage-node controllers run and are tested without a
storage cluster: a StorageOS-like node registry that follows the
emulator's Kubernetes Nodes, served on an address of its own (``storage.url``, the controllers'
``storage.backendURL``) and driven by its trio clock. Tests serve it with
``serve_storage_sim(emu)``; ``kubetrio emulator --simulate`` (or ``--storage-sim``) serves it
beside the standalone emulator. State lives in memory only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.apiview import ApiObjects
from kubetrio.sim.serving import serve_api
from kubetrio.sim.storage.api import VERSION, StorageApi
from kubetrio.sim.storage.faults import FaultError, FaultRule
from kubetrio.sim.storage.service import (
    NODE_ID_ANNOTATION,
    RequestRecord,
    SimError,
    SimNode,
    SimulatedStorage,
    SimVolume,
)

__all__ = [
    "NODE_ID_ANNOTATION",
    "FaultError",
    "FaultRule",
    "RequestRecord",
    "SimError",
    "SimNode",
    "SimVolume",
    "SimulatedStorage",
    "StorageApi",
    "serve_storage_sim",
]


@asynccontextmanager
async def serve_storage_sim(
    server: Emulator | Client, **options: Any
) -> AsyncIterator[SimulatedStorage]:
    """Serve the service of ``server``'s Nodes on a port of its own and run it for the block
    (``server``: an emulator, or a client of any API server; ``options``: ``csi_driver``,
    ``offline_after``, ``lock_seconds``, ``seed``; see ``SimulatedStorage``); its ``url`` is
    the backend URL. It follows the Nodes through the API, as ``kubetrio simulate`` does
    beside any API server."""
    nodes = ApiObjects(resources=(ApiObjects.nodes,))
    storage = SimulatedStorage(nodes, **options)
    client = (
        server
        if isinstance(server, Client)
        else Client.from_url(server.url, token=server.token, qps=0)
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(nodes.run, client)
        address = await nursery.start(serve_api, StorageApi(storage), "the simulated storage")
        storage.url = f"{address}/{VERSION}"
        nursery.start_soon(storage.run)
        await nodes.ready()  # the block begins with the Nodes there are
        try:
            yield storage
        finally:
            nursery.cancel_scope.cancel()
