"""The mock clock stands still while only client requests are in flight.

On a loaded machine a round trip can outlast the autojump threshold; if trio sees only idle
tasks meanwhile, simulated time jumps to the next deadline (a cache-sync timeout, a watch's
end) although nothing that takes simulated time happened: the suite's latent spurious
``CacheSyncTimeout``. A slow network is simulated here by a TCP relay in threads of its own,
which trio cannot see, holding every chunk a client sends for ``DELAY`` real seconds.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import trio

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.testing import wait_for
from tests.helpers.kube import configmap

DELAY = 0.3  # real seconds per chunk sent: several autojump thresholds


class SlowRelay:
    """Relays connections to ``port`` on 127.0.0.1; what clients send is delayed."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.sockets: list[socket.socket] = [self.listener]
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, server]
            for pump in (
                threading.Thread(target=self._pump, args=(client, server, DELAY), daemon=True),
                threading.Thread(target=self._pump, args=(server, client, 0.0), daemon=True),
            ):
                self.threads.append(pump)
                pump.start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, delay: float) -> None:
        try:
            while data := source.recv(65536):
                time.sleep(delay)  # the network's own latency, which trio cannot see
                sink.sendall(data)
        except OSError:
            pass  # the other side or close() ended it
        finally:
            for end in (source, sink):
                with suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        for sock in self.sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self.threads:
            thread.join()


@contextmanager
def slow_network(emulator: Emulator) -> Iterator[Client]:
    """A client that reaches ``emulator`` through a ``SlowRelay``."""
    relay = SlowRelay(emulator.port)
    try:
        yield Client.from_url(relay.url, token=emulator.token)
    finally:
        relay.close()


async def test_no_simulated_time_passes_while_a_watch_connects(emulator: Emulator) -> None:
    with slow_network(emulator) as client:
        cache = InformerCache(client)
        cache.informer(ConfigMap)
        async with trio.open_nursery() as nursery:
            await nursery.start(cache.run)
            start = trio.current_time()
            with trio.fail_after(60):  # a request timed out by a jump would retry for good
                await cache.wait_for_sync()
            emulator.create(
                {**configmap("late"), "metadata": {"name": "late", "namespace": "default"}}
            )  # in-process: only the watch sees it
            await wait_for(cache, ConfigMap, "late", timeout=3600)
            # Nothing here waits on simulated time: any that passed was a jump mid-request.
            assert trio.current_time() - start == 0
            nursery.cancel_scope.cancel()


async def test_manager_caches_sync_on_a_slow_network(emulator: Emulator) -> None:
    from kubetrio.testing import run_manager

    def watch_configmaps(manager: Any, config: Mapping[str, Any] | None) -> None:
        manager.cache.informer(ConfigMap)

    emulator.create({**configmap("early"), "metadata": {"name": "early", "namespace": "default"}})
    with slow_network(emulator) as client:
        start = trio.current_time()
        async with run_manager(emulator, watch_configmaps, client=client, cache_sync_timeout=1):
            assert trio.current_time() - start == 0
