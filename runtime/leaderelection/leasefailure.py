"""Why leader election cannot even start, said in one line an operator can act on.

Campaigning for a lease in a namespace that does not exist, or with an identity RBAC does not
let touch leases, fails the same way on every retry; client-go logs it every retry period
forever, and the replica stays unready with nothing but a warning to say why. The first such
answer, before this replica ever led, ends the campaign instead. Anything that may heal
(5xx, timeouts, conflicts) is retried as before.
"""

from __future__ import annotations

from kubetrio.runtime.cache.syncfailure import identity_in
from kubetrio.runtime.client.errors import ApiError

__all__ = ["LeaseRefused", "lease_refusal"]


class LeaseRefused(Exception):
    """The lease cannot be campaigned for until someone changes the cluster; one line."""

    def __init__(self, message: str, error: ApiError) -> None:
        super().__init__(message)
        self.error = error


def lease_refusal(namespace: str, name: str, error: ApiError) -> LeaseRefused | None:
    """The refusal ``error`` (a request for lease ``namespace/name``) is final, or None."""
    lease = f"lease {namespace}/{name}"
    if error.status == 404 and "namespaces" in error.message:
        return LeaseRefused(f"{lease}: namespace {namespace} does not exist ({error})", error)
    if error.status == 403:
        return LeaseRefused(
            f"RBAC: {identity_in(error.message)} cannot campaign for {lease} ({error.message}); "
            f"grant it get, create and update on leases.coordination.k8s.io in namespace "
            f"{namespace}",
            error,
        )
    if error.status == 401:
        return LeaseRefused(
            f"Unauthorized: the API server rejected the credentials campaigning for {lease} "
            f"({error})",
            error,
        )
    return None
