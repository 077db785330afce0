"""What a failed reconcile logs: a warning means a person should look, so a conflict (the
object changed since the cache read it, routine optimistic concurrency) is an info line, while
any other API failure stays a warning. Both servers answer the 409 for real."""

from __future__ import annotations

import logging

import pytest
import trio

from kubetrio.api.core import ConfigMap
from kubetrio.runtime import Client, ObjectKey, Result
from kubetrio.runtime.manager.manager import Manager
from kubetrio.testing import run_manager
from kubetrio.testing.servers import ApiServer, admin_client


class StaleWriter:
    """Writes each ConfigMap with a resourceVersion another writer has just made stale (a
    real 409), then reads a Secret that does not exist (a real 404), then succeeds."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.attempts = 0
        self.done = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        self.attempts += 1
        cm = await self.client.get(ConfigMap, key.name, namespace=key.namespace)
        if self.attempts == 1:
            ns = key.namespace
            await self.client.patch(ConfigMap, key.name, {"data": {"by": "other"}}, namespace=ns)
            stale = {"metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {}}
            await self.client.patch(ConfigMap, key.name, stale, namespace=ns)  # 409: now stale
        elif self.attempts == 2:
            await self.client.get(ConfigMap, "missing", namespace=key.namespace)  # 404
        self.done.set()
        return Result()


@pytest.mark.process
async def test_a_conflict_is_info_and_other_api_failures_warn(
    api_server: ApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kubetrio.controller")
    client = admin_client(api_server)
    writer = StaleWriter(client)

    def setup(manager: Manager, _config: object) -> None:
        ns = api_server.namespace
        manager.controller("stale").for_(ConfigMap, namespace=ns).complete(writer)

    async with run_manager(api_server, setup):
        await client.create(
            ConfigMap, {"metadata": {"name": "one"}}, namespace=api_server.namespace
        )
        with trio.fail_after(60):
            await writer.done.wait()
    lines = [
        (r.levelname, r.msg["event"], r.msg.get("error", ""))
        for r in caplog.records
        if isinstance(r.msg, dict) and "retry" in r.msg["event"]
    ]
    assert [(level, event) for level, event, _ in lines] == [
        ("INFO", "object changed while reconciling, will retry"),
        ("WARNING", "reconcile failed, will retry"),
    ]
    assert lines[1][2].startswith("404")
