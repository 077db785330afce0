"""``kubetrio emulator --storage-sim`` (and ``--simulate``, which implies it) serves the simulated
storage service on an address of its own, announced as ``storage-backend=`` (where
``--storage-backend-url`` should point), and the storage client reads it; the API server's own
address serves no storage API."""

from __future__ import annotations

import signal
from pathlib import Path

import msgspec
import pytest
import trio

from kubetrio.controllers.storage import list_storage_nodes
from kubetrio.emulator.testclient import EmuClient
from kubetrio.sim.storage import NODE_ID_ANNOTATION
from tests.helpers.emulator_process import admin_token, start_announced

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.mark.parametrize("flag", ["--storage-sim", "--simulate"])
async def test_standalone_emulator_serves_the_storage_service(tmp_path: Path, flag: str) -> None:
    proc, announced = await start_announced(tmp_path, flag)
    try:
        backend = announced["storage-backend"]
        assert backend.startswith("http://127.0.0.1:") and backend.endswith("/v1")
        client = EmuClient(announced["url"], admin_token(tmp_path))
        assert (await client.get("/_storage/v1/nodes")).status == 404  # not the API server's
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1"}}
        created = await client.request("POST", "/api/v1/nodes", node)
        assert created.status == 201
        rv = created.json()["metadata"]["resourceVersion"]
        status = {**node, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        reply = await client.request("PUT", "/api/v1/nodes/w1/status", msgspec.json.encode(status))
        assert reply.status == 200, reply.body
        # The service registers the Ready node and annotates it: wait for that write.
        with trio.fail_after(20):
            async with client.watch(f"/api/v1/nodes?watch=1&resourceVersion={rv}") as events:
                async for event in events:
                    annotations = event["object"]["metadata"].get("annotations") or {}
                    if "csi.storageos.com" in annotations.get(NODE_ID_ANNOTATION, ""):
                        break
        ids = msgspec.json.decode(annotations[NODE_ID_ANNOTATION])
        nodes = await list_storage_nodes(backend)
        assert [(n.name, n.health, n.id) for n in nodes] == [
            ("w1", "online", ids["csi.storageos.com"])
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            assert await proc.wait() == 0


async def test_plain_emulator_has_no_storage_service(tmp_path: Path) -> None:
    proc, announced = await start_announced(tmp_path)
    try:
        assert "storage-backend" not in announced
        admin = EmuClient(announced["url"], admin_token(tmp_path))
        assert (await admin.get("/_storage/v1/nodes")).status == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            assert await proc.wait() == 0
