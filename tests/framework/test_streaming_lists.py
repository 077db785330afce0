"""Informers sync by streaming list where the server has them: one watch that sends every
existing object, then a bookmark ending the initial state (client-go's WatchList). No LIST
request is made, so no whole-list JSON body is ever held; a server that refuses streaming lists
gets LIST+WATCH instead, and the cache is the same either way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.plugin import control_plane_assets
from kubetrio.testing.servers import ApiServer, on_control_plane

COUNT = 40


def requests_by_verb(registry: CollectorRegistry, verb: str) -> float:
    """Requests the client completed with HTTP method ``verb`` (a LIST is a GET; a watch is
    counted when it ends, so a cancelled one is not)."""
    total = 0.0
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "rest_client_requests_total" and sample.labels["method"] == verb:
                total += sample.value
    return total


async def sync_configmaps(
    server: ApiServer, **informer_options: bool
) -> tuple[Informer[ConfigMap], CollectorRegistry]:
    seed = server.client()
    for i in range(COUNT):
        await seed.create(
            ConfigMap, {"metadata": {"name": f"cm-{i:03d}"}}, namespace=server.namespace
        )
    registry = CollectorRegistry()
    client: Client = server.client(registry=registry)
    informer = Informer(client, ConfigMap, namespace=server.namespace, **informer_options)
    late = trio.Event()

    def added(obj: ConfigMap, _initial: bool) -> None:
        if obj.metadata.name == "late":
            late.set()

    informer.add_handler(EventHandler(on_add=added))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            # The watch goes on after the initial state: a change made now arrives.
            await seed.create(ConfigMap, {"metadata": {"name": "late"}}, namespace=server.namespace)
            await late.wait()
            nursery.cancel_scope.cancel()
    return informer, registry


@pytest.mark.process
async def test_an_informer_syncs_by_streaming_list_and_watches_on(api_server: ApiServer) -> None:
    informer, registry = await sync_configmaps(api_server)
    names = sorted(cm.metadata.name for cm in informer.lister.list())
    assert names == sorted([f"cm-{i:03d}" for i in range(COUNT)] + ["late"])
    assert informer.streaming_lists and informer.relists == 1
    assert informer.last_resource_version
    assert requests_by_verb(registry, "GET") == 0  # no LIST


@pytest.mark.process
async def test_without_streaming_the_informer_lists(api_server: ApiServer) -> None:
    informer, registry = await sync_configmaps(api_server, streaming_lists=False)
    assert len(informer.store) == COUNT + 1
    assert requests_by_verb(registry, "GET") == 1


@pytest.fixture(scope="module")
def plane_without_watch_list() -> Iterator[ControlPlane]:
    """A kube-apiserver with streaming lists turned off (as servers before 1.27 are)."""
    assets = control_plane_assets()
    with ControlPlane(assets=assets, apiserver_flags=["--feature-gates=WatchList=false"]) as plane:
        yield plane


@pytest.mark.process
async def test_a_server_refusing_streaming_lists_gets_list_and_watch(
    plane_without_watch_list: ControlPlane, mock_clock: trio.testing.MockClock
) -> None:
    async with on_control_plane(plane_without_watch_list) as server:
        informer, registry = await sync_configmaps(server)
    assert len(informer.store) == COUNT + 1
    assert not informer.streaming_lists  # refused once: not asked again
    assert requests_by_verb(registry, "GET") == 1
