"""Why no response came from the API server, said in a few words.

The real cause (refused, name not resolved, certificate not trusted, timed out) may sit several
levels down: trio wraps a failed TLS handshake in ``BrokenResourceError`` and its connection
attempts in a group. An operator needs the server's address and the cause.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator
from types import UnionType
from typing import Literal

from kubetrio.runtime.http.errors import NoResponse

__all__ = ["Problem", "classify", "transport_problem"]


def transport_problem(error: BaseException) -> str:
    """``no response from the API server at <url>: <cause>`` for ``error`` (the client's
    ``NoResponse``), with its own text as the cause when none below is recognised."""
    where = _server(error)
    return f"no response from the API server{f' at {where}' if where else ''}: {_cause(error)}"


Problem = Literal[
    "untrusted",
    "wrong-host",
    "bad-certificate",
    "host-not-found",
    "refused",
    "tls",
    "timeout",
    "other",
]


def classify(error: BaseException) -> Problem:
    """What went wrong on the way to the server, for advice on what to check."""
    found = _recognised(error)
    return found[0] if found is not None else "other"


def _cause(error: BaseException) -> str:
    found = _recognised(error)
    return found[1] if found is not None else " ".join(str(error).split())


def _recognised(error: BaseException) -> tuple[Problem, str] | None:
    causes = list(_causes(error))
    # Most specific first: a certificate verification failure is also an SSLError.
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _verify_failure(cause)
    for kind, problem, say in _SAYINGS:
        for cause in causes:
            if isinstance(cause, kind):
                return problem, say(cause)
    return None


# OpenSSL's verify results that mean "no trusted CA vouches for this chain" (the client's CA
# is the suspect) and "the certificate does not name the host dialled"; any other failure is
# the certificate's own fault (expired, or missing what strict verification requires).
_UNTRUSTED_CODES = frozenset({2, 18, 19, 20, 21})  # unable to get issuer, self-signed, ...
_WRONG_HOST_CODES = frozenset({62, 64})  # hostname mismatch, IP address mismatch


def _verify_failure(error: BaseException) -> tuple[Problem, str]:
    assert isinstance(error, ssl.SSLCertVerificationError)
    detail = error.verify_message or error.reason or "verification failed"
    if error.verify_code in _UNTRUSTED_CODES:
        return "untrusted", f"its TLS certificate is not trusted ({detail})"
    if error.verify_code in _WRONG_HOST_CODES:
        return "wrong-host", f"its TLS certificate is not for this address ({detail})"
    return "bad-certificate", f"the server's TLS certificate is unacceptable ({detail})"


def _handshake(error: BaseException) -> str:
    return f"TLS handshake failed ({getattr(error, 'reason', None) or error})"


def _not_found(error: BaseException) -> str:
    return f"host name not found ({getattr(error, 'strerror', None) or error})"


_Saying = tuple[type[BaseException] | UnionType, Problem, Callable[[BaseException], str]]
_SAYINGS: tuple[_Saying, ...] = (
    (socket.gaierror, "host-not-found", _not_found),
    (ConnectionRefusedError, "refused", lambda _: "connection refused"),
    (ssl.SSLError, "tls", _handshake),
    (TimeoutError, "timeout", lambda _: "timed out"),
)


def _server(error: BaseException) -> str:
    for cause in _causes(error):
        if isinstance(cause, NoResponse):
            return cause.origin
    return ""


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and everything it wraps: causes, contexts, a ``reason`` attribute, exceptions
    passed as arguments, and the members of groups (trio's failed connection attempts)."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        inner = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        inner.extend(current.args)
        if isinstance(current, BaseExceptionGroup):  # trio's failed connection attempts
            inner.extend(current.exceptions)
        pending.extend(e for e in inner if isinstance(e, BaseException))
