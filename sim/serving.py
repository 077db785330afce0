"""The simulated world's own HTTP services (the cloud, the storage service) each on an address of
its own, as a real provider's API is never reached through the API server's address.

Served by kubetrio's one HTTP server (``kubetrio.runtime.http``) on a loopback listener, in the
caller's nursery and trio run (so on its clock); nothing here knows of an emulator, so the same
services run beside any API server.
"""

from __future__ import annotations

from typing import Final

import trio

from kubetrio.runtime.http.listen import BindAddress, open_listeners
from kubetrio.runtime.http.messages import Handler
from kubetrio.runtime.http.server import HttpServer

__all__ = ["LOOPBACK", "serve_api"]

LOOPBACK: Final = "127.0.0.1"
# The services' requests are a machine or a fault to script: small.
_MAX_BODY: Final = 1024 * 1024


async def serve_api(
    handler: Handler,
    purpose: str,
    *,
    host: str = LOOPBACK,
    port: int = 0,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handler`` on ``host:port`` (0: a free port) until cancelled; reports its base URL
    (``http://host:port``) once it accepts connections. ``purpose`` names the service in the
    error of an address that cannot be bound. Kept-alive connections are never closed for
    idleness: a client's connection outlives any simulated idle hour, as on the emulator."""
    listeners, bound = await open_listeners(BindAddress(host, port), purpose)
    try:
        server = HttpServer(handler, max_body=_MAX_BODY)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, server.serve_connection, listeners)
            task_status.started(f"http://{host}:{bound[0][1]}")
    finally:
        for listener in listeners:
            await trio.aclose_forcefully(listener)
