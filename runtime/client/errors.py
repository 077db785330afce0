"""One error type for everything the API server (or the way to it) can say no with."""

from __future__ import annotations

import contextlib

import msgspec

from kubetrio.api.meta import Status


class ApiError(Exception):
    """A failed API request: HTTP status, the Status ``reason``, its message, and Retry-After.

    ``status`` is 0 when no response arrived at all (connection refused, reset, timed out).
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        retry_after: float | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.method = method
        self.path = path
        where = f" ({method} {path})" if method else ""
        super().__init__(f"{status} {reason}: {message}{where}" if status else f"{message}{where}")

    @classmethod
    def from_response(
        cls,
        status: int,
        body: bytes,
        *,
        http_reason: str = "",
        retry_after_header: str | None = None,
        method: str = "",
        path: str = "",
    ) -> ApiError:
        """Build from a response; a body that is not a Status still yields a readable error."""
        try:
            decoded = msgspec.json.decode(body, type=Status)
        except (msgspec.DecodeError, msgspec.ValidationError):
            decoded = None
        if decoded is not None and (decoded.reason or decoded.message):
            reason = decoded.reason or http_reason or "Unknown"
            message = decoded.message
            hint = decoded.details.retry_after_seconds if decoded.details else None
        else:
            reason = http_reason or "Unknown"
            message = body[:300].decode(errors="replace").strip() or http_reason
            hint = None
        retry_after: float | None = float(hint) if hint else None
        if retry_after_header:
            # The HTTP-date form is never sent by the API server; ignore it rather than fail.
            with contextlib.suppress(ValueError):
                retry_after = float(retry_after_header)
        return cls(status, reason, message, retry_after=retry_after, method=method, path=path)


def is_not_found(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 404


def is_conflict(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 409 and error.reason != "AlreadyExists"


def is_already_exists(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.reason == "AlreadyExists"


def is_gone(error: BaseException) -> bool:
    """410: a watch or list asked for history the server no longer has."""
    return isinstance(error, ApiError) and error.status == 410


def is_too_many_requests(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 429


def is_invalid(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 422


def is_unauthorized(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 401


def is_forbidden(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.status == 403


def is_unreachable(error: BaseException) -> bool:
    """No response at all: the server is down, unreachable, or did not answer in time."""
    return isinstance(error, ApiError) and error.status == 0
