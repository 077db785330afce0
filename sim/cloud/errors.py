"""Cloud errors carry MCM's code names (the simulated world must not import the controllers, so the
names are spelled here) and map to HTTP statuses the way gRPC gateways map them, so a driver
can fall back on the status when a body is unreadable."""

from __future__ import annotations

from typing import Any

CODE_HTTP_STATUS: dict[str, int] = {
    "Canceled": 499,
    "Unknown": 500,
    "InvalidArgument": 400,
    "DeadlineExceeded": 504,
    "NotFound": 404,
    "AlreadyExists": 409,
    "PermissionDenied": 403,
    "ResourceExhausted": 429,
    "FailedPrecondition": 400,
    "Aborted": 409,
    "OutOfRange": 400,
    "Unimplemented": 501,
    "Internal": 500,
    "Unavailable": 503,
    "DataLoss": 500,
    "Unauthenticated": 401,
    "Uninitialized": 412,
}


class CloudError(Exception):
    """A failed cloud call: ``code`` is an MCM code name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in CODE_HTTP_STATUS:
            raise ValueError(f"unknown machine code {code!r}")
        super().__init__(code, message)
        self.code = code
        self.message = message

    @property
    def http_status(self) -> int:
        return CODE_HTTP_STATUS[self.code]

    def body(self) -> dict[str, Any]:
        """A ``metav1.Status``-shaped body whose reason is the code name."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": self.code,
            "message": self.message,
            "code": self.http_status,
        }
