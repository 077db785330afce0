"""``kubetrio emulator --simulate``: the standalone emulator runs the simulated cluster with its
realistic delays (a pod starts about a second after it is bound)."""

from __future__ import annotations

import signal
from pathlib import Path

import msgspec
import pytest
import trio

from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from tests.helpers.emulator_process import _start, admin_token
from tests.helpers.simcluster import SimPod, Watched, node, pod

pytestmark = [pytest.mark.process, pytest.mark.slow]


async def test_standalone_emulator_simulates_the_cluster(tmp_path: Path) -> None:
    proc, url = await _start(tmp_path, "--simulate")
    try:
        client = Client.from_url(url, token=admin_token(tmp_path))
        informer: Informer[SimPod] = Informer(client, SimPod)
        pods = Watched(informer)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            # The simulated delays run from when the server took the pod in, before its answer
            # reached us: time from before the requests.
            start = trio.current_time()
            for doc in (node("n1"), pod("web")):
                path = (
                    "/api/v1/nodes" if doc["kind"] == "Node" else "/api/v1/namespaces/default/pods"
                )
                await client.request("POST", path, body=msgspec.json.encode(doc))
            await pods.until(lambda: (p := pods.get("web", "default")) is not None and p.ready, 30)
            assert trio.current_time() - start >= 1.0  # ClusterSimulation.realistic()
            web = pods.get("web", "default")
            assert web is not None and web.node == "n1"
            nursery.cancel_scope.cancel()
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            assert await proc.wait() == 0
