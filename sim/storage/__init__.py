"""The simulated storage service, so the storage-node controllers run and are tested without a
storage cluster: a StorageOS-like node registry that follows the
emulator's Kubernetes Nodes, served at ``/_storage/v1`` on the emulator's port and driven by its
trio clock. Tests mount it with ``serve_storage_sim(emu)``; ``kubetrio emulator --simulate``
(or ``--storage-sim``) mounts it in the standalone emulator. State lives in memory only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.sim.apiview import ApiObjects
from kubetrio.sim.storage.api import PREFIX, VERSION, StorageApi
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
    "PREFIX",
    "FaultError",
    "FaultRule",
    "RequestRecord",
    "SimError",
    "SimNode",
    "SimVolume",
    "SimulatedStorage",
    "StorageApi",
    "serve_storage_sim",
    "storage_url",
]


def storage_url(emulator_url: str) -> str:
    """The storage backend URL (``storage.backendURL``) of the service on that emulator."""
    return f"{emulator_url.rstrip('/')}{PREFIX}/{VERSION}"


@asynccontextmanager
async def serve_storage_sim(emu: Emulator, **options: Any) -> AsyncIterator[SimulatedStorage]:
    """Mount the service on ``emu`` and run it for the block (``options``: ``csi_driver``,
    ``offline_after``, ``lock_seconds``, ``seed``; see ``SimulatedStorage``). It follows the
    emulator's Nodes through its API."""
    objects = ApiObjects(resources=(ApiObjects.nodes,))
    storage = SimulatedStorage(objects, **options)
    emu.mount(PREFIX, StorageApi(storage))
    async with trio.open_nursery() as nursery:
        client = Client.from_url(emu.url, token=emu.token, qps=0)
        await nursery.start(objects.run, client)
        nursery.start_soon(storage.run)
        try:
            yield storage
        finally:
            nursery.cancel_scope.cancel()
