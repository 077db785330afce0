"""Blocking HTTP (pykube-ng's authenticated requests session) made cancellable from trio.

pykube-ng is synchronous, so every request runs in a trio worker thread. Abandoning a thread on
cancellation returns control at once but leaves it blocked in ``recv`` until the HTTP timeout,
holding a connection and a capacity slot. Instead, every connection a worker thread uses is
registered with the call that owns it; cancelling the call shuts that socket down, which wakes
the blocked read with an error and ends the thread within milliseconds.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pykube
import requests
import trio
from pykube.http import KubernetesHTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

T = TypeVar("T")

_calls = threading.local()


class CallAborted(ConnectionError):
    """The trio side gave up on this call; raised in the worker thread."""


class InFlightCall:
    """The connection one worker-thread call is using, so trio can cut it."""

    __slots__ = ("_connection", "_ended", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: HTTPConnection | None = None
        self._ended = False

    def attach(self, connection: HTTPConnection) -> None:
        with self._lock:
            if self._ended:
                raise CallAborted("request cancelled before it was sent")
            self._connection = connection

    def finish(self) -> None:
        with self._lock:
            self._ended = True
            self._connection = None

    def abort(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            connection, self._connection = self._connection, None
        sock = getattr(connection, "sock", None)
        if sock is not None:
            # OSError: already closed by the peer or the thread, so nothing is left to wake.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _register(connection: HTTPConnection) -> None:
    call: InFlightCall | None = getattr(_calls, "current", None)
    if call is not None:
        call.attach(connection)


class _TrackedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _TrackedHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _TrackedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


class TrackedAdapter(KubernetesHTTPAdapter):  # type: ignore[misc]
    """pykube's adapter (it adds the kubeconfig's credentials) over tracked connections."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _TrackedHTTPConnectionPool,
            "https": _TrackedHTTPSConnectionPool,
        }


def http_client(config: pykube.KubeConfig, pool_size: int) -> pykube.HTTPClient:
    """pykube's client with a pool as large as our thread limit (its default of 10 is not)."""
    adapter = TrackedAdapter(config, pool_connections=pool_size, pool_maxsize=pool_size)
    client = pykube.HTTPClient(config, http_adapter=adapter)
    # With trust_env, requests re-reads the proxy variables and ~/.netrc on every request —
    # the manager's largest single cost in a profile (25% of the machine benchmark's wall
    # time). The proxy settings are read once here instead, so they still apply.
    client.session.trust_env = False
    client.session.proxies.update(requests.utils.get_environ_proxies(client.url))
    return client


async def run_in_thread(fn: Callable[[], T], limiter: trio.CapacityLimiter) -> T:
    """Run blocking ``fn`` in a worker thread; on cancellation cut its connection and return."""
    call = InFlightCall()

    def in_thread() -> T:
        _calls.current = call
        try:
            return fn()
        finally:
            _calls.current = None
            call.finish()

    try:
        return await trio.to_thread.run_sync(in_thread, abandon_on_cancel=True, limiter=limiter)
    except BaseException:
        call.abort()
        raise
