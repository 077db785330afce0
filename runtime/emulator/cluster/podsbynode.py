"""Which pods each node holds, kept current from store events, so a simulated controller's pass
visits the pods a change concerns instead of every pod in the cluster.

Why: a level-triggered pass that reads the whole cluster costs O(pods) on every change, so a
cluster built one object at a time costs O(pods²) — 10 ms per pod at 200 nodes and 2 000 pods,
growing with N. A controller that implements ``changed`` (``loop.Tracking``) is told of each
store event as it is committed, notes the changed keys, and keeps this index::

    by_node = PodsByNode()
    by_node.move(("default", "web-0"), "node-a")
    by_node.keys_on("node-a")                # {("default", "web-0")}

The index is exact only while every pod event reaches it; a controller rebuilds it from the store
on a full pass (its first, and any after a failed one).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrio.runtime.emulator.store import Key


class PodsByNode:
    """Pod keys by ``spec.nodeName`` (unbound pods are not indexed)."""

    def __init__(self) -> None:
        self._on: dict[str, set[Key]] = {}
        self._node_of: dict[Key, str] = {}

    def rebuild(self, pods: Iterable[tuple[Key, str]]) -> None:
        self._on.clear()
        self._node_of.clear()
        for key, node in pods:
            self.move(key, node)

    def move(self, key: Key, node: str) -> None:
        """The pod ``key`` is now bound to ``node`` ("" when unbound or gone)."""
        old = self._node_of.get(key, "")
        if old == node:
            return
        if old:
            keys = self._on[old]
            keys.discard(key)
            if not keys:
                del self._on[old]
            del self._node_of[key]
        if node:
            self._on.setdefault(node, set()).add(key)
            self._node_of[key] = node

    def keys_on(self, node: str) -> set[Key]:
        return self._on.get(node, set())
