"""CRD conversion webhooks: ``ConversionReview`` v1, served on ``/convert``.

When a CustomResourceDefinition serves several versions with ``strategy: Webhook``, the API
server sends objects in one version and asks for them in another (``desiredAPIVersion``). A
converter is a plain function over raw objects, one per kind (its group and kind), for every
pair of versions::

    def convert_greeting(obj: dict[str, Any], to_api_version: str) -> dict[str, Any]:
        if to_api_version == "example.com/v2":
            spec = obj["spec"]
            return {**obj, "apiVersion": to_api_version,
                    "spec": {"message": {"text": spec["message"]}}}
        ...

    manager.webhook(GreetingV1).converter(convert_greeting)

Raw dicts rather than typed views, on purpose: a conversion must carry every field across,
including those no Struct of ours declares, and a view would drop them. The converter may
also be ``async``. It returns the object in ``to_api_version`` (the response is refused if the
``apiVersion`` or ``kind`` is wrong); raising fails the whole review with the message, as
controller-runtime does; the API server then fails the request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from kubetrio.api.meta import Status
from kubetrio.runtime.webhook.review import ConversionRequest, ConversionResponse

__all__ = ["ConversionError", "Converter", "Converters"]

Converter = Callable[[dict[str, Any], str], dict[str, Any] | Awaitable[dict[str, Any]]]


class ConversionError(Exception):
    """A review that cannot be converted; the message goes into the response's result."""


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class Converters:
    """The converters registered with the manager, by (group, kind)."""

    def __init__(self) -> None:
        self._by_kind: dict[tuple[str, str], Converter] = {}

    def __bool__(self) -> bool:
        return bool(self._by_kind)

    def register(self, group: str, kind: str, converter: Converter) -> None:
        if (group, kind) in self._by_kind:
            raise ValueError(f"a converter for {kind}.{group} is already registered")
        self._by_kind[(group, kind)] = converter

    async def handle(self, request: ConversionRequest) -> ConversionResponse:
        try:
            converted = [
                await self._convert(raw, request.desired_api_version) for raw in request.objects
            ]
        except ConversionError as error:
            return failed(request.uid, str(error))
        return ConversionResponse(
            uid=request.uid,
            converted_objects=tuple(msgspec.Raw(msgspec.json.encode(obj)) for obj in converted),
            result=Status(status="Success"),
        )

    async def _convert(self, raw: msgspec.Raw, desired: str) -> dict[str, Any]:
        try:
            obj = msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            raise ConversionError(f"objects: not JSON: {error}") from None
        if not isinstance(obj, dict):
            raise ConversionError("objects: each object must be a JSON object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ConversionError("objects: an object has no apiVersion or kind")
        if _group(api_version) != _group(desired):
            raise ConversionError(
                f"desiredAPIVersion {desired!r}: another group than the object's {api_version!r}"
            )
        if api_version == desired:
            return obj  # nothing to convert, as the API server would not even ask
        converter = self._by_kind.get((_group(api_version), kind))
        if converter is None:
            raise ConversionError(f"no converter for {kind} in {_group(api_version)!r}")
        name = (obj.get("metadata") or {}).get("name", "")
        result = converter(obj, desired)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, dict):
            raise ConversionError(f"{kind} {name}: converter returned {type(result).__name__}")
        if result.get("apiVersion") != desired or result.get("kind") != kind:
            raise ConversionError(
                f"{kind} {name}: converter returned apiVersion {result.get('apiVersion')!r} "
                f"kind {result.get('kind')!r}, expected {desired!r} {kind!r}"
            )
        return result


def failed(uid: str, message: str) -> ConversionResponse:
    return ConversionResponse(uid=uid, result=Status(status="Failure", message=message))
