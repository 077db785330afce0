"""CustomResourceDefinitions created and served before anything uses them.

A CRD's resource is not served the moment its create returns: the API server accepts its names,
marks it Established and adds it to discovery a moment later (near-instant on a real server,
instant on the emulator). A manager started in that moment meets a 404 on its first list and
takes the CRD for missing, so whoever installs CRDs and then starts a client waits, as envtest's
``WaitForCRDs`` does, until each CRD is Established and its resource is listed by discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import trio

from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# The typed client has no watch of CRDs; while one is not served, re-check on this period.
POLL_SECONDS = 0.05


class CrdsNotServed(Exception):
    """The CRDs were created but not served within the time given."""


def served_version(crd: Mapping[str, Any]) -> str:
    return next(str(v["name"]) for v in crd["spec"]["versions"] if v.get("served", True))


async def served(client: Client, crd: Mapping[str, Any]) -> bool:
    """Established, and its resource listed by discovery."""
    name = crd["metadata"]["name"]
    current = msgspec.json.decode(await client.request("GET", f"{CRD_PATH}/{name}"))
    conditions = (current.get("status") or {}).get("conditions") or []
    if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
        return False
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    try:
        body = await client.request("GET", f"/apis/{group}/{served_version(crd)}")
    except ApiError as error:
        if error.status == 404:
            return False
        raise
    resources = msgspec.json.decode(body).get("resources") or []
    return any(r.get("name") == plural for r in resources)


async def create_crds(
    client: Client,
    crds: Sequence[Mapping[str, Any]],
    *,
    timeout: float,  # noqa: ASYNC109 (the failure names it)
) -> None:
    """Create each CRD unless it exists (one left as it is), then wait until all are served.
    Raises ``ApiError`` for a refused create, ``CrdsNotServed`` after ``timeout``."""
    for crd in crds:
        try:
            await client.request("POST", CRD_PATH, body=msgspec.json.encode(crd))
        except ApiError as error:
            if error.status != 409:
                raise
    with trio.move_on_after(timeout):
        for crd in crds:
            while not await served(client, crd):  # noqa: ASYNC110
                await trio.sleep(POLL_SECONDS)
        return
    names = ", ".join(crd["metadata"]["name"] for crd in crds)
    raise CrdsNotServed(f"not served after {timeout:g}s: {names}")
