"""Where a server listens: controller-runtime's bind addresses (``host:port``, ``:port``,
``[v6]:port``, ``0`` to disable) and the listeners they open, one dual-stack socket for
``:port`` as Go's ``net.Listen`` makes it. Binding failures name the address and what would
have been served there, so a port in use says whose port it was."""

from __future__ import annotations

import errno
import ipaddress
import re
from dataclasses import dataclass
from typing import NamedTuple

import trio

__all__ = [
    "BindAddress",
    "BindAddressError",
    "ListenError",
    "Listening",
    "open_listeners",
    "parse_bind_address",
]

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


class BindAddressError(ValueError):
    """A bind address that cannot be parsed; the message names the value."""


class ListenError(OSError):
    """The server could not listen (port in use, address not local); names the address."""


class BindAddress(NamedTuple):
    """Where to listen. ``host`` None means every interface (``:8080``)."""

    host: str | None
    port: int

    def __str__(self) -> str:
        host = self.host or ""
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


def parse_bind_address(value: str) -> BindAddress | None:
    """Parse ``host:port``, ``:port`` or ``[v6]:port``; ``"0"`` or ``""`` mean disabled (None).

    These are controller-runtime's rules for ``--metrics-bind-address`` and
    ``--health-probe-bind-address``. Port 0 asks the kernel for a free port.
    """
    if not isinstance(value, str):
        raise BindAddressError(f"bind address: expected a string, got {value!r}")
    text = value.strip()
    if text in ("", "0"):
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise BindAddressError(
            f'bind address {value!r}: expected "host:port", ":port" or "0" to disable'
        )
    if not port_text.isdigit() or int(port_text) > 65535:
        raise BindAddressError(
            f"bind address {value!r}: port must be a number from 0 to 65535, got {port_text!r}"
        )
    port = int(port_text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise BindAddressError(
                f"bind address {value!r}: {host!r} is not an IPv6 address"
            ) from None
        return BindAddress(host, port)
    if not host:
        return BindAddress(None, port)
    if ":" in host:
        raise BindAddressError(
            f"bind address {value!r}: write an IPv6 host in brackets, [::1]:8080"
        )
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        if not _HOST_NAME.match(host) or host.replace(".", "").isdigit():
            raise BindAddressError(
                f"bind address {value!r}: {host!r} is not an IP address or host name"
            ) from None
    return BindAddress(host, port)


@dataclass(frozen=True, slots=True)
class Listening:
    """What ``serve`` reports once it accepts connections: every (host, port) it listens on."""

    addresses: tuple[tuple[str, int], ...]

    @property
    def port(self) -> int:
        """The port (the first listener's; a host name may resolve to several addresses)."""
        return self.addresses[0][1]


async def _listen(address: BindAddress) -> list[trio.SocketListener]:
    """Listeners for ``address``. ``:port`` is one dual-stack socket, as Go's ``net.Listen``
    makes it, so IPv4 and IPv6 share one port even for ``:0``; IPv4 only where IPv6 is off."""
    if address.host is not None:
        return await trio.open_tcp_listeners(address.port, host=address.host)
    try:
        sock = trio.socket.socket(trio.socket.AF_INET6, trio.socket.SOCK_STREAM)
    except OSError:  # a kernel or container without IPv6
        return await trio.open_tcp_listeners(address.port, host="0.0.0.0")
    try:
        sock.setsockopt(trio.socket.IPPROTO_IPV6, trio.socket.IPV6_V6ONLY, 0)
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        await sock.bind(("::", address.port))
        sock.listen(0xFFFF)  # the kernel caps this at its somaxconn, like trio's default
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
            return await trio.open_tcp_listeners(address.port, host="0.0.0.0")
        raise
    return [trio.SocketListener(sock)]


async def open_listeners(
    address: BindAddress, purpose: str
) -> tuple[list[trio.SocketListener], tuple[tuple[str, int], ...]]:
    """Listeners for ``address`` and the (host, port) each bound; ListenError naming
    ``purpose`` (what would be served there) when the address cannot be bound."""
    try:
        listeners = await _listen(address)
    except OSError as exc:
        raise ListenError(
            exc.errno, f"cannot listen on {address} for {purpose}: {exc.strerror or exc}"
        ) from exc
    return listeners, tuple(_sockname(listener) for listener in listeners)


def _sockname(listener: trio.SocketListener) -> tuple[str, int]:
    host, port, *_ = listener.socket.getsockname()
    return str(host), int(port)
