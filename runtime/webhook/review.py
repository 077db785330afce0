"""The wire types kube-apiserver sends to webhooks and reads back: ``admission.k8s.io/v1``
``AdmissionReview`` and ``apiextensions.k8s.io/v1`` ``ConversionReview``.

Objects inside a review stay raw JSON (``msgspec.Raw``): a typed view keeps only the fields it
knows, and the mutating handler must diff against the object exactly as the API server sent
it (``kubetrio.runtime.webhook.patch``). ``AdmissionRequest`` is what a defaulter or validator
receives next to the typed object: ``request.dry_run`` says the write will not be persisted, so
a handler with side effects must skip them; ``request.user_info`` says who asked.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kubetrio.api.meta import Model, Status

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "ConversionRequest",
    "ConversionResponse",
    "ConversionReview",
    "ConversionReviewSent",
    "GroupVersionKind",
    "GroupVersionResource",
    "Operation",
    "UserInfo",
]

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


class GroupVersionKind(Model, kw_only=True):
    """``metav1.GroupVersionKind`` as admission reviews carry it."""

    group: str = ""
    version: str = ""
    kind: str = ""


class GroupVersionResource(Model, kw_only=True):
    """``metav1.GroupVersionResource`` as admission reviews carry it."""

    group: str = ""
    version: str = ""
    resource: str = ""


class UserInfo(Model, kw_only=True):
    """Who made the request under review (``authentication.k8s.io/v1`` UserInfo)."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = {}


class AdmissionRequest(Model, kw_only=True):
    """One admission request (``AdmissionReview.request``)."""

    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource = msgspec.field(default_factory=GroupVersionResource)
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: Operation
    user_info: UserInfo = msgspec.field(default_factory=UserInfo)
    # Raw JSON; ``null`` (or absent) where the operation has none (oldObject on CREATE).
    object: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    old_object: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    dry_run: bool = False
    options: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class AdmissionResponse(Model, kw_only=True):
    """A webhook's answer: allowed or not (with a status), warnings, and for defaulting a
    base64 JSON patch."""

    uid: str
    allowed: bool
    status: Status | None = None
    patch: bytes | None = None  # base64 on the wire, as Go's []byte
    patch_type: Literal["JSONPatch"] | None = None
    audit_annotations: dict[str, str] = {}
    warnings: tuple[str, ...] = ()


# The reviews keep apiVersion and kind on the wire although they are the defaults (the API
# server checks them); the side they do not carry goes as null, which Go reads as absent.
class AdmissionReview(Model, kw_only=True, omit_defaults=False):
    """``admission.k8s.io/v1`` AdmissionReview: the request kube-apiserver sends, the
    response the webhook returns, in one envelope."""

    api_version: str = "admission.k8s.io/v1"
    kind: str = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None


class ConversionRequest(Model, kw_only=True):
    """The objects to convert and the apiVersion wanted."""

    uid: str
    desired_api_version: str = msgspec.field(name="desiredAPIVersion")
    objects: tuple[msgspec.Raw, ...] = ()


class ConversionResponse(Model, kw_only=True):
    """The converted objects, in order, or a failed result saying why."""

    uid: str
    converted_objects: tuple[msgspec.Raw, ...] = ()
    result: Status = msgspec.field(default_factory=Status)


class ConversionReview(Model, kw_only=True, omit_defaults=False):
    """``apiextensions.k8s.io/v1`` ConversionReview: the CRD conversion request and response."""

    api_version: str = "apiextensions.k8s.io/v1"
    kind: str = "ConversionReview"
    request: ConversionRequest | None = None
    response: ConversionResponse | None = None


class ConversionReviewSent(Model, kw_only=True):
    """A ConversionReview as kube-apiserver sends it, read for its request only: the envelope
    also carries an empty ``response`` whose nil list Go writes as ``"convertedObjects": null``,
    which ``ConversionResponse`` (what the webhook answers) rightly does not accept."""

    api_version: str = "apiextensions.k8s.io/v1"
    kind: str = "ConversionReview"
    request: ConversionRequest | None = None
