"""HTTP/1.1 to the API server straight from trio: the client's one transport.

Why: a controller's requests are small and many. Through pykube-ng's ``requests`` session each
one crossed into a worker thread and back and went through requests' and urllib3's layers —
together most of a manager's CPU (``tests/bench/requests.py`` compares the paths; the figures
are in ``docs/performance.md``). Here a request is a few ``h11`` events written on a kept-alive
trio stream (``kubetrio.runtime.http``) and read back in the same task, so a cancelled
call simply stops.

pykube-ng is still what reads the kubeconfig; ``kubetrio.runtime.client.credentials`` decides
each request's ``Authorization`` (bearer token, password, exec plugin) and client certificate
(re-read token files, cached exec plugins, rotating certificate files; a 401 renews them and the
request is sent once more), and ``kubetrio.runtime.client.endpoint`` the CA and the proxy. One
TLS context is made per client certificate, so a rotated certificate is used by new connections
while requests under way finish on the old ones.

Example (``Client`` does this for every request; callers never need to)::

    wire = Wire.from_config(config)
    status, reason, headers, body = await wire.exchange(
        "GET", "/api/v1/namespaces", {"Accept": "application/json"}, None, read_timeout=30
    )
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Hashable
from urllib.parse import urlsplit

import pykube
import trio

from kubetrio.runtime.client.credentials import Credentials, Sent
from kubetrio.runtime.client.endpoint import cluster_proxy, verify_option
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.threadclock import ThreadClock
from kubetrio.runtime.http.pool import DEFAULT_IDLE, Answer, ConnectionPool, Headers, Streamed
from kubetrio.runtime.http.proxy import Proxy
from kubetrio.runtime.http.tls import client_context
from kubetrio.runtime.util.inflight import request_in_flight

__all__ = ["Wire"]

# Client certificates whose contexts (and idle connections) are kept: the current one and
# the ones requests under way may still be finishing with.
CONTEXTS_KEPT = 4


class Wire:
    """Requests to one API server as one kubeconfig user."""

    def __init__(
        self,
        url: str,
        credentials: Credentials,
        *,
        verify: str | bool | None = None,
        server_name: str | None = None,
        proxy: Proxy | None = None,
        max_idle: int = DEFAULT_IDLE,
    ) -> None:
        self.url = url.rstrip("/")
        self.credentials = credentials
        self.verify = verify
        self.pool = ConnectionPool(
            url, tls=self._context, server_name=server_name, proxy=proxy, max_idle=max_idle
        )
        # Exec plugins may start a process (seconds): their lookups go to a thread.
        self._blocking_credentials = credentials.exec_plugin is not None
        self._contexts: dict[Hashable, ssl.SSLContext] = {}

    @classmethod
    def from_config(cls, config: pykube.KubeConfig, max_idle: int = DEFAULT_IDLE) -> Wire:
        """For the current context of ``config``. Raises ``CredentialError`` when its user's
        credentials are unusable and ``KubeconfigError`` when its server or proxy is. Call it
        inside the trio run that will use it, so cached credentials age on that run's clock."""
        cluster = config.cluster
        url = str(cluster["server"])
        if urlsplit(url).scheme not in ("http", "https"):
            name = config.contexts[config.current_context].get("cluster")
            raise KubeconfigError(f"clusters[{name}].server {url}: expected an http(s) URL")
        return cls(
            url,
            Credentials.for_user(config, ThreadClock.capture()),
            verify=verify_option(config),
            server_name=cluster.get("tls-server-name"),
            proxy=cluster_proxy(config),
            max_idle=max_idle,
        )

    def _context(self, cert: Hashable) -> ssl.SSLContext:
        context = self._contexts.get(cert)
        if context is None:
            context = client_context(self.verify)
            if cert is not None:
                assert isinstance(cert, tuple)
                context.load_cert_chain(*cert)
            self._contexts[cert] = context
            while len(self._contexts) > CONTEXTS_KEPT:  # an old rotation: its pool goes too
                oldest = next(iter(self._contexts))
                del self._contexts[oldest]
                self.pool.forget(oldest)
        return context

    async def _credentials(self, headers: Headers) -> Sent:
        if self._blocking_credentials:
            # A plugin's run is part of the request: a test's mock clock must not jump (and
            # time out the caller) while it runs in its thread.
            with request_in_flight():
                return await trio.to_thread.run_sync(self.credentials.apply, headers)
        return self.credentials.apply(headers)

    async def _renewed(self, sent: Sent) -> bool:
        if self._blocking_credentials:
            with request_in_flight():
                return await trio.to_thread.run_sync(
                    self.credentials.refresh_after_unauthorized, sent
                )
        return self.credentials.refresh_after_unauthorized(sent)

    async def exchange(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes | None,
        *,
        read_timeout: float,
        before_send: Callable[[Headers], None] | None = None,
    ) -> Answer:
        """Send ``method target`` (path and query) and read the whole answer.

        ``before_send`` runs right before the request's bytes are written (a fence check);
        whatever it raises stops the request unsent. Raises ``NoResponse`` when no complete
        answer came (refused, TLS, the proxy, timed out after ``read_timeout`` seconds,
        connection lost) and ``CredentialError`` when no credentials could be had.
        """
        sent = await self._credentials(headers)
        answer = await self.pool.exchange(
            method,
            target,
            headers,
            body,
            key=sent.cert,
            read_timeout=read_timeout,
            connect_timeout=min(10.0, read_timeout),
            before_send=before_send,
        )
        if answer[0] == 401 and await self._renewed(sent):
            # Refused before the server acted on it: safe to send again, once.
            sent = await self._credentials(headers)
            answer = await self.pool.exchange(
                method,
                target,
                headers,
                body,
                key=sent.cert,
                read_timeout=read_timeout,
                connect_timeout=min(10.0, read_timeout),
                before_send=before_send,
            )
        return answer

    @contextlib.asynccontextmanager
    async def stream(
        self, target: str, headers: Headers, *, connect_timeout: float
    ) -> AsyncIterator[Streamed]:
        """A GET whose answer is read as it arrives (a watch). A 401 renews the credentials
        and, if they changed, the request is made once more, as ``exchange`` does."""
        for attempt in range(2):
            async with contextlib.AsyncExitStack() as opened:
                # Until the answer's head is in, this is an exchange like any other: a request
                # in flight (the stream after it is not: it stays open for good).
                with request_in_flight():
                    sent = await self._credentials(headers)
                    answer = await opened.enter_async_context(
                        self.pool.stream(
                            "GET", target, headers, key=sent.cert, connect_timeout=connect_timeout
                        )
                    )
                    again = answer.status == 401 and attempt == 0 and await self._renewed(sent)
                if not again:
                    yield answer
                    return
        raise AssertionError("unreachable")  # pragma: no cover
