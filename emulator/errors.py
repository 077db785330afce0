"""API errors as ``metav1.Status`` bodies.

Clients branch on ``reason`` and ``code`` and kubectl prints ``message`` verbatim, so each builder
reproduces the real apiserver's wording (k8s.io/apimachinery/pkg/api/errors) rather than
inventing its own.
"""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A request failure that becomes a Status response instead of a traceback."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or []

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(group: str, plural: str) -> str:
    """``plural.group`` as the apiserver names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str | None = None) -> ApiError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def invalid(group: str, kind: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; ``causes`` are (cause type, field, message) as field.ErrorList renders them."""
    # The message lists each distinct error once (ToAggregate), the causes every one.
    shown = list(dict.fromkeys(f"{field}: {msg}" for _t, field, msg in causes))
    text = ", ".join(shown)
    if len(shown) > 1:
        text = f"[{text}]"
    details: dict[str, Any] = {"name": name} if name else {}  # omitempty, as in StatusDetails
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": t, "message": m, "field": f} for t, f, m in causes]
    qualified_kind = f"{kind}.{group}" if group else kind  # schema.GroupKind's String()
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {text}', details)


def no_such_resource() -> ApiError:
    """404 for a URL that names no served resource (not an object that is missing)."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml",
        {},
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int = 0) -> ApiError:
    details: dict[str, Any] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    headers = [("Retry-After", str(retry_after))] if retry_after else []
    return ApiError(429, "TooManyRequests", message, details, headers)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(group, plural)} "{name}" is forbidden: {why}',
        _details(group, plural, name),
    )


def internal(message: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def warning(text: str) -> tuple[str, str]:
    """A ``Warning`` response header as the apiserver writes one: code 299, quoted text
    (kubectl prints it as "Warning: <text>")."""
    return ("Warning", "299 - " + json.dumps(text))


def success(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body
