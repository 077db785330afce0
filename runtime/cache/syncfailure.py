"""Why an informer cannot sync, said in one line an operator can act on.

Some LIST failures do not heal by retrying: a CRD that is not installed (404), credentials the
API server rejects (401), or RBAC that does not let this identity list the kind (403). client-go
keeps retrying them forever and controller-runtime gives up after its cache sync timeout with a
generic message; here the first such answer ends the wait for the caches with what to fix.
Transient failures (5xx, 429, timeouts) are retried as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kubetrio.api.registry import BUILTIN_KINDS, KindInfo
from kubetrio.runtime.client.errors import ApiError

__all__ = ["CacheSyncError", "identity_in", "sync_failure"]

_SERVICE_ACCOUNT = re.compile(r'User "system:serviceaccount:([^:"]+):([^:"]+)"')
_USER = re.compile(r'User "([^"]+)"')


class CacheSyncError(Exception):
    """An informer's LIST was refused for a reason a retry will not fix; ``str`` is one line."""

    def __init__(self, message: str, error: ApiError) -> None:
        super().__init__(message)
        self.error = error


def install_hint(kinds: Iterable[KindInfo]) -> str:
    """``"; install its CRD: kubetrio crd generate mod:Class | kubectl apply -f -"`` when every
    kind was declared with ``@kubetrio.api.resource`` (the declaration is the CRD's source), else
    "" (a kind known only by name has no class to generate from)."""
    kinds = list(kinds)
    if any(k.crd is not None and k.crd.source.startswith("kubetrio.") for k in kinds):
        return ""  # kubetrio's own kinds: their CRDs ship with it (`kubetrio crds`)
    sources = sorted({k.crd.source for k in kinds if k.crd is not None and k.crd.source})
    if not kinds or any(k.crd is None or not k.crd.source for k in kinds):
        return ""
    what = "its CRD" if len(kinds) == 1 else "their CRDs"
    return f"; install {what}: kubetrio crd generate {' '.join(sources)} | kubectl apply -f -"


def sync_failure(kind: KindInfo, namespace: str | None, error: ApiError) -> CacheSyncError | None:
    """The reason ``error`` (from listing ``kind``) makes the cache unsyncable, or None when
    a retry may still succeed."""
    resource = kind.group_resource
    if error.status == 404:
        what = "API not served" if kind in BUILTIN_KINDS else "CRD not installed"
        hint = "" if kind in BUILTIN_KINDS else install_hint([kind])
        return CacheSyncError(f"{what}: {resource} ({error}){hint}", error)
    if error.status == 403:
        where = f" in namespace {namespace}" if namespace else " cluster-wide"
        return CacheSyncError(
            f"RBAC: {identity_in(error.message)} cannot list {resource}{where} ({error.message}); "
            f"grant it list and watch on {resource}{where}",
            error,
        )
    if error.status == 401:
        return CacheSyncError(
            f"Unauthorized: the API server rejected the credentials listing {resource} ({error})",
            error,
        )
    return None


def identity_in(message: str) -> str:
    """Who was refused, from kube's Forbidden message (``User "system:serviceaccount:ns:n"``)."""
    if match := _SERVICE_ACCOUNT.search(message):
        return f"the ServiceAccount {match.group(1)}/{match.group(2)}"
    if match := _USER.search(message):
        return f'user "{match.group(1)}"'
    return "this identity"
