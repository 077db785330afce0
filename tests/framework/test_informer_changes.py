"""``InformerChanges``: waiters wake on every kind of change, never miss one that lands while
they check, give up at their deadline, watch several informers at once, and share one handler
per informer however many waits run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap, Secret
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.changes import InformerChanges, any_change
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.testing import eventually, wait_for, wait_gone
from tests.helpers.kube import Kubectl


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def secret(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "data": {},
    }


@asynccontextmanager
async def running(emu: Emulator) -> AsyncIterator[InformerCache]:
    """A cache of ConfigMaps and Secrets, synced, run until the block ends."""
    cache = InformerCache(Client.from_url(emu.url, token=emu.token))
    cache.informer(ConfigMap)
    cache.informer(Secret)
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        yield cache
        nursery.cancel_scope.cancel()


@pytest.mark.kubectl
async def test_a_waiter_wakes_on_add_update_and_delete_from_kubectl(
    emu: Emulator, kubectl: Kubectl
) -> None:
    async with running(emu) as cache:
        informer = cache.informer(ConfigMap)
        changes = InformerChanges.of(informer)
        lister = informer.lister

        def data() -> dict[str, str] | None:
            found = lister.get("default", "c")
            return None if found is None else found.data

        far = trio.current_time() + 60
        for command, condition in (
            (("create", "configmap", "c", "--from-literal=k=v"), lambda: data() == {"k": "v"}),
            (("patch", "configmap", "c", "-p", '{"data":{"k":"w"}}'), lambda: data() == {"k": "w"}),
            (("delete", "configmap", "c"), lambda: data() is None),
        ):
            assert not condition()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kubectl.run, *command)
                assert await changes.wait_until(condition, far), command
            assert changes.waiting == 0


async def test_next_change_returns_on_the_next_change_of_any_kind(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as cache:
        changes = InformerChanges.of(cache.informer(ConfigMap))
        for change in (
            lambda: emu.create(configmap("n", k="v")),
            lambda: emu.update(configmap("n", k="w")),
            lambda: emu.delete("v1", "ConfigMap", "n", "default"),
        ):
            with trio.fail_after(60):
                async with trio.open_nursery() as nursery:

                    async def waiter() -> None:
                        await changes.next_change()

                    nursery.start_soon(waiter)
                    await trio.testing.wait_all_tasks_blocked()
                    assert changes.waiting == 1  # registered, still waiting: nothing changed
                    change()


async def test_a_change_applied_while_the_check_awaits_is_not_lost(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as cache:
        informer = cache.informer(ConfigMap)
        changes = InformerChanges.of(informer)
        with any_change([changes]) as changed:
            # The check awaits (an API call, say); the informer applies a change meanwhile.
            emu.create(configmap("during"))
            await wait_for(cache, ConfigMap, "during")
            assert changed.is_set()  # so waiting after this check returns at once
        assert changes.waiting == 0


async def test_wait_until_gives_up_at_the_deadline_and_rechecks_then(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as cache:
        informer = cache.informer(ConfigMap)
        changes = InformerChanges.of(informer)
        deadline = trio.current_time() + 300
        assert not await changes.wait_until(
            lambda: informer.lister.get("default", "x") is not None, deadline
        )
        assert trio.current_time() == deadline
        assert changes.waiting == 0
        # A condition that holds at the deadline counts, even with no change to wake on.
        assert await changes.wait_until(lambda: trio.current_time() >= deadline + 5, deadline + 5)


async def test_one_wait_watches_several_informers(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as cache:
        maps = InformerChanges.of(cache.informer(ConfigMap))
        secrets = InformerChanges.of(cache.informer(Secret))
        with trio.fail_after(60), any_change([maps, secrets]) as changed:
            assert maps.waiting == secrets.waiting == 1
            emu.create(secret("s"))  # only Secrets change
            await changed.wait()
        assert maps.waiting == secrets.waiting == 0


async def test_many_waits_share_one_handler_per_informer(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with running(emu) as cache:
        informer = cache.informer(ConfigMap)
        handlers = len(informer._handlers)
        changes = InformerChanges.of(informer)
        assert len(informer._handlers) == handlers + 1
        for i in range(50):
            assert InformerChanges.of(informer) is changes
            emu.create(configmap(f"m{i}"))
            await wait_for(cache, ConfigMap, f"m{i}")
            await eventually(
                lambda i=i: informer.lister.get("default", f"m{i}") is not None, on=cache
            )
            emu.delete("v1", "ConfigMap", f"m{i}", "default")
            await wait_gone(cache, ConfigMap, f"m{i}")
        assert len(informer._handlers) == handlers + 1
        assert changes.waiting == 0
