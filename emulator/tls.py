"""HTTPS beside HTTP on the one port. kubectl (client-go) sends a kubeconfig's bearer token and
impersonation headers only over TLS, so the kubeconfig points at ``https://`` with a CA made at
start; in-process clients keep using the plain ``http://`` URL. A connection whose first byte
is a TLS handshake record is wrapped in TLS, anything else is served as plain HTTP."""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Awaitable, Callable

import trio

from kubetrio.emulator.audit import peer_address
from kubetrio.runtime.certs.serving import self_signed, server_context

_HANDSHAKE = 0x16  # TLS record type of a ClientHello


class ServingCert:
    """A CA (what the kubeconfig trusts) and the serving certificate it signs, for 127.0.0.1,
    localhost, the in-cluster service names and ``host``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        ips: tuple[str, ...]
        try:
            ips = ("127.0.0.1", str(ipaddress.ip_address(host)))
            names: tuple[str, ...] = ()
        except ValueError:
            ips, names = ("127.0.0.1",), (host,)
        pair = self_signed("localhost", ips, also=("kubernetes.default.svc", *names))
        assert pair.ca_pem is not None
        self.ca_pem = pair.ca_pem
        self.context = server_context(pair)


class _Replay(trio.abc.Stream):
    """A stream whose first bytes were already read (to look at them) and are given back."""

    def __init__(self, inner: trio.SocketStream, first: bytes) -> None:
        self._inner = inner
        self._first = first

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._first:
            data, self._first = self._first, b""
            return data
        return bytes(await self._inner.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._inner.aclose()


def sniffing(
    serve: Callable[[trio.abc.Stream], Awaitable[None]], cert: ServingCert
) -> Callable[[trio.SocketStream], Awaitable[None]]:
    """A ``serve_tcp`` handler that hands ``serve`` a TLS stream or the plain one."""

    async def handler(stream: trio.SocketStream) -> None:
        with contextlib.suppress(OSError):  # the audit log's sourceIPs
            peer_address.set(str(stream.socket.getpeername()[0]))
        try:
            first = bytes(await stream.receive_some(65536))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await trio.aclose_forcefully(stream)
            return
        replay = _Replay(stream, first)
        if first[:1] == bytes([_HANDSHAKE]):
            await serve(trio.SSLStream(replay, cert.context, server_side=True))
        else:
            await serve(replay)

    return handler
