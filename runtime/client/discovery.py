"""Before the informers start: are the custom resources they list served at all?

Without this, a cluster missing a CRD is found out by the first LIST of each informer, one
404 per kind and cluster, the first ending the start. One discovery request per API group
version finds every missing kind at once, so the operator installs them in one go.
Built-in kinds are not checked: every API server serves them, and a check would cost every
start a request per group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from kubetrio.api.registry import BUILTIN_KINDS, KindInfo
from kubetrio.runtime.cache.syncfailure import CacheSyncError, install_hint
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.log import get_logger

__all__ = ["UnservedKinds", "check_served"]

log = get_logger("kubetrio.discovery")


class UnservedKinds(CacheSyncError):
    """The API server serves none of ``kinds`` (their CRDs are not installed)."""

    def __init__(self, kinds: list[KindInfo], cluster: str, error: ApiError) -> None:
        names = ", ".join(kind.group_resource for kind in kinds)
        where = f"{cluster} cluster: " if cluster else ""
        hint = install_hint(kinds)
        super().__init__(f"{where}CRD not installed: {names} ({error}){hint}", error)
        self.kinds = kinds
        self.cluster = cluster


class _Resource(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct):
    resources: list[_Resource] = msgspec.field(default_factory=list)


async def check_served(client: Client, kinds: Iterable[KindInfo], cluster: str = "") -> None:
    """Raise ``UnservedKinds`` naming every custom kind of ``kinds`` the server does not serve.

    Only a definite answer counts: a discovery request that fails otherwise (timeout, 5xx,
    403) is left for the informers, whose LIST says what is wrong in its own words."""
    by_version: dict[str, set[KindInfo]] = defaultdict(set)
    for kind in kinds:
        if kind not in BUILTIN_KINDS:
            by_version[kind.api_version].add(kind)
    missing: list[KindInfo] = []
    first_error: ApiError | None = None
    for api_version, wanted in sorted(by_version.items()):
        try:
            # The legacy core group ("v1") is served under /api, every other under /apis.
            root = "/apis" if "/" in api_version else "/api"
            body = await client.request("GET", f"{root}/{api_version}")
        except ApiError as error:
            if error.status != 404:
                log.warning("discovery failed", group_version=api_version, error=str(error))
                continue
            missing.extend(wanted)
            first_error = first_error or error
            continue
        served = {r.name for r in msgspec.json.decode(body, type=_ResourceList).resources}
        absent = [kind for kind in wanted if kind.plural not in served]
        if absent:
            missing.extend(absent)
            first_error = first_error or ApiError(
                404, "NotFound", f"{api_version} does not list {absent[0].plural}"
            )
    if first_error is not None:
        missing.sort(key=lambda kind: kind.group_resource)
        raise UnservedKinds(missing, cluster, first_error)
