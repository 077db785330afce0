"""The labels and keys sharding is made of, kubetrio's own names for the reference design's.

* ``shard.sharding.kubetrio.io/<ring>: <shard id>`` on a sharded object: the shard that owns
  it. Shards' informers select on it, so each caches only its own objects.
* ``drain.sharding.kubetrio.io/<ring>: "true"``: the sharder asks the owning shard to let go.
  The shard finishes what it is doing with the object, starts nothing new, and removes both
  labels in one write; only then does the sharder assign the object anew.
* ``sharding.kubetrio.io/ring: <ring>`` on a shard's Lease: membership of the ring.
* ``sharding.kubetrio.io/state: ready|expired|uncertain|dead|orphaned`` on a shard's Lease,
  kept by the sharder for people and dashboards (decisions never read it).

An object hashes by ``group/Kind/namespace/name``; an object with a controller owner
reference hashes by its owner's, so it lands on its owner's shard. Neither uses the uid or
``generateName``: an admission webhook, which sees neither on a create, must compute the same.
"""

from __future__ import annotations

from typing import Protocol

from kubetrio.api.meta import KubeObject, OwnerReference, kind_of

PREFIX = "sharding.kubetrio.io"
RING_LABEL = f"{PREFIX}/ring"
STATE_LABEL = f"{PREFIX}/state"
# A ring name becomes a label key's name part: at most 63 characters of [a-z0-9.-_].
MAX_RING_NAME = 63


class MetaFields(Protocol):
    """What sharding reads of an object's metadata: an ``ObjectMeta``, or the sharder's
    leaner ``Placement``."""

    name: str
    namespace: str
    labels: dict[str, str]
    resource_version: str

    def controller_ref(self) -> OwnerReference | None: ...


def shard_label(ring: str) -> str:
    """The label key naming an object's shard in ``ring``."""
    return f"shard.{PREFIX}/{ring}"


def drain_label(ring: str) -> str:
    """The label key asking an object's shard in ``ring`` to let go of it."""
    return f"drain.{PREFIX}/{ring}"


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "" for the core group ("v1")


def object_key(kind: type[KubeObject], metadata: MetaFields) -> str:
    """The ring key of an object of ``kind``: ``group/Kind/namespace/name``."""
    info = kind_of(kind)
    return f"{info.group}/{info.kind}/{metadata.namespace}/{metadata.name}"


def owner_key(metadata: MetaFields) -> str | None:
    """The ring key of an object's controller owner (it follows its owner); None without one."""
    ref: OwnerReference | None = metadata.controller_ref()
    if ref is None:
        return None
    return f"{_group(ref.api_version)}/{ref.kind}/{metadata.namespace}/{ref.name}"
