"""``Manager.run()`` from a user's script raises an anticipated failure bare, as ``kubetrio run``
reports it in one line: a script can ``except ListenError`` without digging in exception groups
(trio wraps whatever leaves a nursery)."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.server import ListenError


async def test_a_taken_port_is_raised_bare(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        manager = Manager(
            Client.from_url(emu.url, token=emu.token),
            metrics_bind_address=f"127.0.0.1:{port}",
            health_probe_bind_address="127.0.0.1:0",
        )
        with pytest.raises(ListenError) as caught:
            await manager.run()
    assert f"cannot listen on 127.0.0.1:{port} for metrics" in str(caught.value)
