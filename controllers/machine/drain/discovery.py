"""Whether the API server offers the eviction subresource (MCM and kubectl both ask first)."""

from __future__ import annotations

import msgspec

from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client


class _Resource(msgspec.Struct):
    name: str
    group: str = ""


class _ResourceList(msgspec.Struct):
    resources: list[_Resource] = []


async def eviction_supported(client: Client) -> bool:
    """True when ``/api/v1`` lists ``pods/eviction`` served by the policy group."""
    try:
        payload = await client.request("GET", "/api/v1")
        listing = msgspec.json.decode(payload, type=_ResourceList)
    except (ApiError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    return any(r.name == "pods/eviction" and r.group in ("", "policy") for r in listing.resources)
