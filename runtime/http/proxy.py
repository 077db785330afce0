"""Which proxy a request goes through, by the rules client-go follows (Go's
``http.ProxyFromEnvironment``), and the CONNECT that opens a tunnel through it.

``HTTPS_PROXY`` serves ``https://`` URLs and ``HTTP_PROXY`` plain ones (each also in lower
case, the upper-case one first); ``NO_PROXY`` lists exceptions: ``*``, IP addresses, CIDR
ranges, and domains — ``example.com`` matches itself and its subdomains, ``.example.com`` (or
``*.example.com``) only the subdomains — each optionally with a ``:port``. As in Go,
``localhost`` and loopback addresses never go through a proxy taken from the environment (a
kubeconfig's ``proxy-url`` applies to every request of its cluster).
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import h11
import trio

from kubetrio.runtime.http.errors import ProxyRefused

__all__ = ["Proxy", "authority", "open_tunnel", "proxy_from_environment"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def authority(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy, reached over TLS when ``https``; ``authorization`` is the
    ``Proxy-Authorization`` its URL's user and password make."""

    https: bool
    host: str
    port: int
    authorization: str | None = None

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """``http://[user:password@]host[:port]`` or ``https://…``; no scheme means
        ``http://``, as in Go. ValueError saying why for anything else."""
        parts = urlsplit(url)
        if not parts.scheme or not parts.hostname:
            parts = urlsplit(f"http://{url}")
        scheme = parts.scheme.lower()
        if scheme.startswith("socks"):
            raise ValueError(f"{scheme} proxies are not supported: use an http or https proxy")
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError("expected http://host[:port] or https://host[:port]")
        try:
            port = parts.port or _DEFAULT_PORTS[scheme]
        except ValueError:
            raise ValueError("the port is not a number from 0 to 65535") from None
        credentials = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            credentials = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        return cls(scheme == "https", parts.hostname, port, credentials)

    def __str__(self) -> str:
        """Its URL without the credentials, to show."""
        return f"{'https' if self.https else 'http'}://{authority(self.host, self.port)}"


def _first(environ: Mapping[str, str], name: str) -> tuple[str, str]:
    for key in (name, name.lower()):
        if environ.get(key):
            return key, environ[key]
    return name, ""


def proxy_from_environment(url: str, environ: Mapping[str, str]) -> Proxy | None:
    """The proxy for requests to ``url``, or None. ValueError naming the variable (never its
    value: it may hold a password) when the proxy it names cannot be used."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    name, value = _first(environ, "HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY")
    if not value:
        return None
    host = (parts.hostname or "").lower()
    port = str(parts.port or _DEFAULT_PORTS[scheme])
    if not _use_proxy(host, port, _first(environ, "NO_PROXY")[1]):
        return None
    try:
        return Proxy.parse(value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def _use_proxy(host: str, port: str, no_proxy: str) -> bool:
    """Go's ``useProxy``: False for loopback and for a host ``no_proxy`` names."""
    if host == "localhost":
        return False
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None and ip.is_loopback:
        return False
    return not any(_matches(entry, host, port, ip) for entry in no_proxy.split(","))


def _matches(
    entry: str, host: str, port: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> bool:
    entry = entry.strip().lower()
    if not entry:
        return False
    if entry == "*":
        return True
    if "/" in entry:  # a CIDR range
        try:
            return ip is not None and ip in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False
    try:
        entry_ip = ipaddress.ip_address(entry_host)
    except ValueError:
        pass
    else:
        return ip is not None and entry_ip == ip and entry_port in ("", port)
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    whole = not entry_host.startswith(".")
    suffix = entry_host if not whole else f".{entry_host}"
    named = host.endswith(suffix) or (whole and host == entry_host)
    return named and entry_port in ("", port)


def _split_host_port(entry: str) -> tuple[str, str]:
    """``host:port``, ``[v6]:port``, or a bare host (an IPv6 address has colons of its own)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    host, colon, port = entry.rpartition(":")
    if colon and host and ":" not in host and port.isdigit():
        return host, port
    return entry, ""


async def open_tunnel(stream: trio.abc.Stream, proxy: Proxy, target: str) -> None:
    """Ask the proxy at the other end of ``stream`` for a tunnel to ``target`` (host:port);
    ``stream`` then carries the tunnel. ProxyRefused unless the proxy agrees (2xx)."""
    connection = h11.Connection(h11.CLIENT)
    headers = [("Host", target)]
    if proxy.authorization is not None:
        headers.append(("Proxy-Authorization", proxy.authorization))
    request = h11.Request(method="CONNECT", target=target, headers=headers)
    await stream.send_all(
        (connection.send(request) or b"") + (connection.send(h11.EndOfMessage()) or b"")
    )
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(bytes(await stream.receive_some(65536)))
        elif isinstance(event, h11.Response):
            break
        elif not isinstance(event, h11.InformationalResponse):
            raise ProxyRefused(f"proxy {proxy} closed the connection instead of CONNECT {target}")
    if not 200 <= event.status_code < 300:
        reason = event.reason.decode("latin-1")
        raise ProxyRefused(
            f"proxy {proxy} answered CONNECT {target} with {event.status_code} {reason}"
        )
    if connection.trailing_data[0]:
        raise ProxyRefused(f"proxy {proxy} sent data before the tunnel to {target} was used")
