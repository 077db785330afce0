"""Blocking HTTP (pykube-ng's authenticated requests session) made cancellable from trio.

The fallback path: ``Client`` sends through ``kubetrio.runtime.client.wire`` from trio itself,
except for users only pykube-ng can authenticate (passwords, ``auth-provider``) and servers reached
through a proxy, whose requests come here. pykube-ng is synchronous, so each such request runs
in a trio worker thread. Abandoning a thread on
cancellation returns control at once but leaves it blocked in ``recv`` until the HTTP timeout,
holding a connection and a capacity slot. Instead, every connection a worker thread uses is
registered with the call that owns it; cancelling the call shuts that socket down, which wakes
the blocked read with an error and ends the thread within milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pykube
import requests
import trio
from pykube.http import KubernetesHTTPAdapter
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from kubetrio.runtime.client.credentials import Credentials
from kubetrio.runtime.client.execplugin import ExecPlugin
from kubetrio.runtime.client.threadclock import ThreadClock

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
    """pykube's adapter over tracked connections, with credentials that last (see
    ``kubetrio.runtime.client.credentials``); pykube-ng itself authenticates only passwords and
    ``auth-provider`` users (``credentials`` None)."""

    def __init__(
        self, config: pykube.KubeConfig, credentials: Credentials | None = None, **kwargs: Any
    ) -> None:
        super().__init__(config, **kwargs)
        self.credentials = credentials
        self._verify = _verify_option(config)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _TrackedHTTPConnectionPool,
            "https": _TrackedHTTPSConnectionPool,
        }
        server_name = self.kube_config.cluster.get("tls-server-name")
        if server_name:
            self.poolmanager.connection_pool_kw["assert_hostname"] = server_name
            self.poolmanager.connection_pool_kw["server_hostname"] = server_name

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        credentials = self.credentials
        if credentials is None or "Authorization" in request.headers:
            pykube_authenticated: requests.Response = super().send(request, **kwargs)
            return pykube_authenticated
        if self._verify is not None:
            kwargs["verify"] = self._verify
        sent = credentials.apply(request.headers, kwargs)
        response: requests.Response = HTTPAdapter.send(self, request, **kwargs)
        if response.status_code == 401 and credentials.refresh_after_unauthorized(sent):
            # Refused before the server acted on it: safe to send again, once.
            response.close()
            credentials.apply(request.headers, kwargs)
            response = HTTPAdapter.send(self, request, **kwargs)
        return response


def _verify_option(config: pykube.KubeConfig) -> str | bool | None:
    """requests' ``verify`` as pykube-ng derives it from the cluster (None: the default)."""
    forced = os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY")
    if forced is not None:
        return forced
    cluster = config.cluster
    if "certificate-authority" in cluster:
        return str(cluster["certificate-authority"].filename())
    if "insecure-skip-tls-verify" in cluster:
        return not cluster["insecure-skip-tls-verify"]
    return None


def http_client(config: pykube.KubeConfig, pool_size: int) -> pykube.HTTPClient:
    """pykube's client with a pool as large as our thread limit (its default of 10 is not).

    Raises ``CredentialError`` when the user's credentials are unusable. Call it inside the
    trio run that will use it, so cached credentials age on that run's clock.
    """
    credentials = Credentials.for_user(config, ThreadClock.capture())
    adapter = TrackedAdapter(
        config, credentials, pool_connections=pool_size, pool_maxsize=pool_size
    )
    client = pykube.HTTPClient(config, http_adapter=adapter)
    # With trust_env, requests re-reads the proxy variables and ~/.netrc on every request —
    # the manager's largest single cost in a profile of tests/bench/machines.py. The proxy
    # settings are read once here instead, so they still apply.
    client.session.trust_env = False
    client.session.proxies.update(requests.utils.get_environ_proxies(client.url))
    return client


def exec_plugin_of(client: pykube.HTTPClient) -> ExecPlugin | None:
    """The exec credential plugin ``client`` authenticates with, if any."""
    adapter = client.session.get_adapter(client.url)
    credentials = adapter.credentials if isinstance(adapter, TrackedAdapter) else None
    return credentials.exec_plugin if credentials is not None else None


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
