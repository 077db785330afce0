"""The informer on a real kube-apiserver whose etcd history is compacted while the informer's
watch is down: its resumed watch answers 410 Gone, the informer says so at INFO (nothing
louder), relists once, and its cache ends equal to the server's list, with the deletes it missed
handed to the handlers as tombstones.

The control plane is this module's own: ConfigMaps are served without the watch cache
(``--watch-cache-sizes=configmaps#0``), so a watch reads etcd itself and etcd's compaction is
what expires its history (with the cache, its own window would, whatever etcd holds). The
informer reaches the server through a ``tcp_link`` the test cuts: a network partition.

Runs on the real clock: the server's time is real, and each wait is on an event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import trio

from kubetrio.api.core import ConfigMap, Namespace
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.store import DeletedFinalStateUnknown
from kubetrio.runtime.client.typed import Client
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.link import tcp_link
from kubetrio.testing.plugin import control_plane_assets

pytestmark = [pytest.mark.process, pytest.mark.slow]

NAMESPACE = "compaction"
WITHIN = 30.0  # a bound on each wait, only so a broken run fails instead of hanging


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with ControlPlane(
        apiserver_flags=["--watch-cache-sizes=configmaps#0"], assets=control_plane_assets()
    ) as plane:
        yield plane


def config_map(name: str, value: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "data": {"v": value}}


class Seen:
    """What the handlers were given, and an event set whenever anything arrived."""

    def __init__(self) -> None:
        self.adds: list[str] = []
        self.updates: list[str] = []
        self.deletes: list[ConfigMap | DeletedFinalStateUnknown[ConfigMap]] = []
        self.changed = trio.Event()

    def handler(self) -> EventHandler[ConfigMap]:
        def note(what: list[str], obj: ConfigMap) -> None:
            what.append(obj.metadata.name)
            self.changed.set()

        def deleted(obj: ConfigMap | DeletedFinalStateUnknown[ConfigMap]) -> None:
            self.deletes.append(obj)
            self.changed.set()

        return EventHandler(
            on_add=lambda obj, _: note(self.adds, obj),
            on_update=lambda _, new: note(self.updates, new),
            on_delete=deleted,
        )


async def until(seen: Seen, condition: object, what: str) -> None:
    assert callable(condition)
    with trio.fail_after(WITHIN):
        while not condition():
            await seen.changed.wait()
            seen.changed = trio.Event()


def cached(informer: Informer[ConfigMap]) -> dict[str, tuple[str, dict[str, str]]]:
    return {
        obj.metadata.name: (obj.metadata.resource_version, dict(obj.data or {}))
        for obj in informer.store.values()
    }


async def test_a_watch_expired_by_compaction_relists_to_the_servers_view(
    plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    admin = Client.from_kubeconfig(str(plane.kubeconfig_path))
    await admin.create(Namespace, {"metadata": {"name": NAMESPACE}})
    for name in ("keep", "change", "drop"):
        await admin.create(ConfigMap, config_map(name, "1"), namespace=NAMESPACE)
    async with tcp_link(int(plane.url.rsplit(":", 1)[1])) as link:
        client = Client.from_kubeconfig(str(plane.kubeconfig_path), server=link.url())
        informer = Informer(client, ConfigMap, namespace=NAMESPACE)
        seen = Seen()
        informer.add_handler(seen.handler())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            with trio.fail_after(WITHIN):
                await informer.wait_for_sync()
            assert sorted(seen.adds) == ["change", "drop", "keep"]
            # The watch delivers a change made while it is up.
            await admin.patch(ConfigMap, "keep", {"data": {"v": "2"}}, namespace=NAMESPACE)
            await until(seen, lambda: "keep" in seen.updates, "the watch saw the update")
            assert informer.relists == 1
            watched_from = int(informer.last_resource_version)

            link.cut()
            await admin.patch(ConfigMap, "change", {"data": {"v": "2"}}, namespace=NAMESPACE)
            await admin.delete(ConfigMap, "drop", namespace=NAMESPACE)
            await admin.create(ConfigMap, config_map("new", "1"), namespace=NAMESPACE)
            compacted = plane.compact_etcd()
            assert compacted > watched_from
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="kubetrio.informer"):
                link.restore()
                await until(seen, lambda: informer.relists == 2, "the informer relisted")
            nursery.cancel_scope.cancel()

    expired = [r for r in caplog.records if r.name == "kubetrio.informer"]
    # Connection failures from the partition may come first; from the 410 on, only calm.
    first_expired = next(
        i for i, r in enumerate(expired) if r.getMessage().startswith("watch history expired")
    )
    assert expired[first_expired].levelno == logging.INFO
    assert "too old" in expired[first_expired].getMessage()
    assert [r.levelname for r in expired[first_expired:]] == ["INFO"]

    server = await admin.list(ConfigMap, namespace=NAMESPACE)
    assert cached(informer) == {
        obj.metadata.name: (obj.metadata.resource_version, dict(obj.data or {}))
        for obj in server.items
    }
    assert sorted(cached(informer)) == ["change", "keep", "new"]
    assert "new" in seen.adds and "change" in seen.updates
    [tombstone] = seen.deletes
    assert isinstance(tombstone, DeletedFinalStateUnknown)
    assert tombstone.obj.metadata.name == "drop"
    await admin.delete(Namespace, NAMESPACE)
