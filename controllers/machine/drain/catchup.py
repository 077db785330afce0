"""Making sure the drain's pod cache has caught up with its cordon before it picks pods.

A pod bound to the node just before the cordon may not be in the informer's cache yet; a drain
that picked from the cache as it stood would finish without it and leave it on a deleted Node
(kubectl drain cannot miss it: it lists from the API server). Waiting until the pod informer has
seen a resourceVersion at least the cordon's is not enough on its own: that informer's
resourceVersion moves only with pod events and bookmarks (about one a minute), so a quiet
cluster would wait for nothing. Instead, after the cordon, one consistent LIST of the node's
pods (what kubectl drain reads) names exactly the pods the cache must hold — controller-runtime's
"wait for the cache to observe" — and the drain waits, event-driven and bounded, until the cache
holds each of them (same UID) or has seen a resourceVersion at least the list's (a listed pod
deleted meanwhile never shows up, but its deletion moves the cache past the list).
"""

from __future__ import annotations

from kubetrio.api.core import Pod
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.selection import pod_name
from kubetrio.runtime.client.retry import retry_transient
from kubetrio.runtime.client.typed import Client

# How long a drain waits for its pod cache; past it the drain fails and its step is retried.
CATCH_UP_TIMEOUT = 60.0


async def wait_for_pods(
    client: Client, cache: DrainCache, node_name: str, deadline: float
) -> list[Pod]:
    """Pods on the node the cache has not caught up with by ``deadline`` (empty: caught up)."""
    listed = await retry_transient(
        client.list, Pod, field_selector=f"spec.nodeName={node_name}", resource_version=""
    )
    version = _number(listed.metadata.resource_version)

    def missing() -> list[Pod]:
        if version is not None and (_number(cache.pods_version()) or 0) >= version:
            return []
        return [pod for pod in listed.items if not _cached(cache, pod)]

    await cache.pod_changes.wait_until(lambda: not missing(), deadline)
    return missing()


def describe(missing: list[Pod]) -> str:
    names = ", ".join(pod_name(pod) for pod in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    return f"the pod cache has not caught up with the node's pods yet ({names}{more})"


def _cached(cache: DrainCache, pod: Pod) -> bool:
    current = cache.pods.get(pod.namespace, pod.name)
    return current is not None and current.metadata.uid == pod.metadata.uid


def _number(resource_version: str) -> int | None:
    """resourceVersions from one etcd (or the emulator) are integers that only grow; anything
    else is opaque and compared by nobody."""
    try:
        return int(resource_version)
    except ValueError:
        return None
