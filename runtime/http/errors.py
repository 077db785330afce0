"""Why a request got no (complete) answer."""

from __future__ import annotations

__all__ = ["ClosedEarly", "NoResponse", "ProtocolError", "ProxyRefused"]


class NoResponse(Exception):
    """No complete answer from ``origin`` (``scheme://host:port``). The cause is chained, so a
    caller can say what happened in its own words; ``connecting`` is True when it came while
    the connection was being opened (TCP, the proxy's tunnel, TLS), before anything was sent."""

    def __init__(self, origin: str, cause: BaseException, *, connecting: bool = False) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.origin = origin
        self.connecting = connecting
        self.__cause__ = cause


class ClosedEarly(ConnectionResetError):
    """The server closed the connection before any byte of its answer."""

    def __init__(self) -> None:
        super().__init__("connection closed before a response")


class ProxyRefused(ConnectionError):
    """The proxy answered the CONNECT with something other than 2xx."""


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 answer."""
