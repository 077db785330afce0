"""What the emulator speaks HTTP with: ``kubetrio.runtime.http``'s server and messages (the
manager's metrics and webhooks are served by the same), answering its own errors as Status
objects as kube-apiserver does, and a prefix ``Router`` so further routes (the emulator's own
``/_emulator/``, a benchmark's) are mounted on the emulator's port. Handlers import ``Request``,
``Response`` and ``json_response`` from this module."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from kubetrio.runtime.http.messages import (
    JSON,
    Cut,
    Handler,
    Request,
    Response,
    StreamResponse,
    StreamWriter,
)
from kubetrio.runtime.http.server import HttpServer

__all__ = [
    "JSON",
    "Cut",
    "Handler",
    "Request",
    "Response",
    "Router",
    "StreamResponse",
    "StreamWriter",
    "api_server",
    "json_response",
]

# Request bodies up to 64 MiB; request line and headers up to 1 MiB (Go's DefaultMaxHeaderBytes).
_MAX_BODY: Final = 64 * 1024 * 1024
_MAX_HEAD: Final = 1024 * 1024


def json_response(
    body: Any, status: int = 200, headers: list[tuple[str, str]] | None = None
) -> Response:
    return Response(status, msgspec.json.encode(body), JSON, headers or [])


class Router:
    """Longest-prefix dispatch; the fallback handles everything else (the Kubernetes API)."""

    def __init__(self, fallback: Handler) -> None:
        self._routes: list[tuple[str, Handler]] = []
        self._fallback = fallback

    def mount(self, prefix: str, handler: Handler) -> None:
        self._routes.append((prefix.rstrip("/"), handler))
        self._routes.sort(key=lambda r: -len(r[0]))

    def resolve(self, path: str) -> Handler:
        for prefix, handler in self._routes:
            if path == prefix or path.startswith(prefix + "/"):
                return handler
        return self._fallback


class _StatusErrors:
    """The server's own errors as kube-apiserver words them: a Status object."""

    def handler_failed(self) -> Response:
        return Response(500, _status_body(500, "Internal error occurred: handler failed"))

    def malformed(self, status: int, problem: str) -> Response:
        return Response(status, _status_body(status, f"malformed HTTP request: {problem}"))


def _status_body(status: int, message: str) -> bytes:
    reason = {400: "BadRequest", 500: "InternalError"}.get(status, "Unknown")
    return msgspec.json.encode(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": status,
        }
    )


def api_server(handler: Handler) -> HttpServer:
    """The emulator's server: Status errors, its size limits, and no idle timeout, as
    kube-apiserver sets none (a client's kept connection outlives any simulated idle hour)."""
    return HttpServer(handler, max_body=_MAX_BODY, max_head=_MAX_HEAD, errors=_StatusErrors())
