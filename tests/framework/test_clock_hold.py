"""The mock clock stands still while only client requests are in flight, on every path.

On a loaded machine a round trip can outlast the autojump threshold; if trio sees only idle
tasks meanwhile, simulated time jumps to the next deadline (a cache-sync timeout, a watch's
end) although nothing that takes simulated time happened: the suite's latent spurious
``CacheSyncTimeout``. A slow network is simulated here by an adapter that delays each request
in its worker thread, which trio cannot see.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests
import trio
from requests.adapters import BaseAdapter

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.testing import wait_for
from tests.helpers.kube import configmap

DELAY = 0.3  # real seconds per request: several autojump thresholds


class SlowNetwork(BaseAdapter):
    """Every request (watches included) spends ``DELAY`` more in its worker thread."""

    def __init__(self, inner: BaseAdapter) -> None:
        super().__init__()
        self.inner = inner

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        time.sleep(DELAY)  # the thread's own wait: what a slow network costs
        return self.inner.send(request, **kwargs)

    def close(self) -> None:
        self.inner.close()


def slow(client: Client) -> Client:
    session = client.api.session
    session.mount(client.base_url, SlowNetwork(session.get_adapter(client.base_url)))
    return client


async def test_no_simulated_time_passes_while_a_watch_connects(
    emulator: Emulator, kube_client: Client
) -> None:
    cache = InformerCache(slow(kube_client))
    cache.informer(ConfigMap)
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        start = trio.current_time()
        await cache.wait_for_sync()
        emulator.create(
            {**configmap("late"), "metadata": {"name": "late", "namespace": "default"}}
        )  # in-process: only the watch sees it
        await wait_for(cache, ConfigMap, "late", timeout=3600)
        # Nothing here waits on simulated time: any that passed was a jump mid-request.
        assert trio.current_time() - start == 0
        nursery.cancel_scope.cancel()


async def test_manager_caches_sync_on_a_slow_network(
    emulator: Emulator, kube_client: Client
) -> None:
    from kubetrio.testing import run_manager

    def watch_configmaps(manager: Any, config: Mapping[str, Any] | None) -> None:
        manager.cache.informer(ConfigMap)

    emulator.create({**configmap("early"), "metadata": {"name": "early", "namespace": "default"}})
    start = trio.current_time()
    async with run_manager(
        emulator, watch_configmaps, client=slow(kube_client), cache_sync_timeout=1
    ):
        assert trio.current_time() - start == 0
