"""Mutating (defaulting) and validating admission handlers over typed objects.

A **defaulter** is ``async def default(obj, request) -> obj``: it gets the typed object the API
server is about to store and returns it with defaults filled in (mutating it in place or
returning a copy, e.g. ``msgspec.structs.replace``). The answer is a JSON patch from the raw
request object to the returned one, computed so that fields the typed view does not know survive
(``kubetrio.runtime.webhook.patch``).

A **validator** has ``validate_create(obj, request)``, ``validate_update(old, new, request)``
and ``validate_delete(obj, request)``; each returns warnings (a list of strings, shown by
kubectl as ``Warning: …``) or None, or raises ``Denied`` to reject the request::

    class MachineValidator:
        async def validate_create(self, obj: Machine, request: AdmissionRequest) -> list[str]:
            if not obj.spec.class_.name:
                raise Denied("spec.class.name: Required value", code=422)
            return []
        ...

``Denied(message, code=403, warnings=())`` becomes ``allowed: false`` with a ``Status`` of
that code and its reason (403 Forbidden, 422 Invalid, …) and the warnings, as
controller-runtime's ``admission.Denied`` and ``apierrors`` do. Any other exception is a bug
in the handler: it is logged with its traceback and answered ``allowed: false``, code 500,
with its message; the server carries on. An object the kind's Struct cannot decode is
answered with code 400 naming the field.

``request.dry_run`` is True when the API server will not persist the result (``kubectl
--dry-run=server``): handlers with side effects must not make them then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from kubetrio.api.meta import KubeObject, Status
from kubetrio.runtime.webhook.patch import json_patch, replay, view
from kubetrio.runtime.webhook.review import AdmissionRequest, AdmissionResponse

__all__ = [
    "Defaulter",
    "Denied",
    "MutatingHandler",
    "ValidatingHandler",
    "Validator",
    "errored",
]

T = TypeVar("T", bound=KubeObject)
T_contra = TypeVar("T_contra", bound=KubeObject, contravariant=True)

Warnings = Sequence[str] | None
Defaulter = Callable[[T, AdmissionRequest], Awaitable[T]]

# metav1.StatusReason for the codes a denial uses.
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    504: "Timeout",
}


class Denied(Exception):
    """Raised by a validator (or defaulter) to reject the request with ``message``."""

    def __init__(self, message: str, code: int = 403, warnings: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.warnings = tuple(warnings)  # shown with the denial, as controller-runtime does


class Validator(Protocol[T_contra]):
    """Validates a kind's creates, updates and deletes for the admission webhook: raise
    ``Denied`` to refuse, return warnings to let it through with them (controller-runtime's
    ``CustomValidator``)."""

    async def validate_create(self, obj: T_contra, request: AdmissionRequest) -> Warnings: ...

    async def validate_update(
        self, old: T_contra, new: T_contra, request: AdmissionRequest
    ) -> Warnings: ...

    async def validate_delete(self, obj: T_contra, request: AdmissionRequest) -> Warnings: ...


class BadObject(Exception):
    """The review's object does not fit the kind's Struct (answered with code 400)."""


def denied(uid: str, refusal: Denied) -> AdmissionResponse:
    """``allowed: false`` with a Status of the refusal's code, as the user will see it."""
    reason = _REASONS.get(refusal.code, "")
    return AdmissionResponse(
        uid=uid,
        allowed=False,
        status=Status(status="Failure", code=refusal.code, reason=reason, message=refusal.message),
        warnings=refusal.warnings,
    )


def errored(uid: str, code: int, message: str) -> AdmissionResponse:
    """controller-runtime's ``admission.Errored``: a Status with the code and message only."""
    return AdmissionResponse(uid=uid, allowed=False, status=Status(code=code, message=message))


def _absent(raw: msgspec.Raw) -> bool:
    return bytes(raw).strip() in (b"", b"null")


def _decode(kind: type[T], raw: msgspec.Raw, field: str) -> T:
    if _absent(raw):
        raise BadObject(f"request.{field}: required for this operation, got none")
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as error:
        raise BadObject(f"request.{field}: {error}") from None
    except msgspec.DecodeError as error:
        raise BadObject(f"request.{field}: not JSON: {error}") from None


class MutatingHandler(Generic[T]):
    """Runs a defaulter and answers with the JSON patch to its result."""

    def __init__(self, kind: type[T], defaulter: Defaulter[T]) -> None:
        self.kind = kind
        self.defaulter = defaulter

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return AdmissionResponse(uid=request.uid, allowed=True)  # nothing to default
        obj = _decode(self.kind, request.object, "object")
        raw: Any = msgspec.json.decode(request.object)
        before = view(obj)  # before the defaulter: it may mutate obj in place
        result = await self.defaulter(obj, request)
        if not isinstance(result, self.kind):
            raise TypeError(
                f"defaulter returned {type(result).__name__}, expected {self.kind.__name__}"
            )
        operations = json_patch(raw, replay(raw, before, view(result)))
        if not operations:
            return AdmissionResponse(uid=request.uid, allowed=True)
        return AdmissionResponse(
            uid=request.uid,
            allowed=True,
            patch=msgspec.json.encode(operations),
            patch_type="JSONPatch",
        )


class ValidatingHandler(Generic[T]):
    """Dispatches to the validator's method for the request's operation."""

    def __init__(self, kind: type[T], validator: Validator[T]) -> None:
        self.kind = kind
        self.validator = validator

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        match request.operation:
            case "CREATE":
                obj = _decode(self.kind, request.object, "object")
                warnings = await self.validator.validate_create(obj, request)
            case "UPDATE":
                new = _decode(self.kind, request.object, "object")
                old = _decode(self.kind, request.old_object, "oldObject")
                warnings = await self.validator.validate_update(old, new, request)
            case "DELETE":
                # The API server sends the object being deleted as oldObject.
                obj = _decode(self.kind, request.old_object, "oldObject")
                warnings = await self.validator.validate_delete(obj, request)
            case _:
                return AdmissionResponse(uid=request.uid, allowed=True)
        return AdmissionResponse(uid=request.uid, allowed=True, warnings=tuple(warnings or ()))


def decode_patch(response: AdmissionResponse) -> list[dict[str, Any]]:
    """The operations of a response's patch (for tests and tools)."""
    if response.patch is None:
        return []
    operations: list[dict[str, Any]] = msgspec.json.decode(response.patch)
    return operations
