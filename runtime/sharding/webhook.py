"""Assignment at creation: a mutating admission webhook that labels a new object with its shard.

Without it a new object waits for the sharder to see it (one watch event and one patch);
with it the object is stored already assigned, and its shard's informer sees it at once. It
answers on every replica (the webhook server runs on all), from the ring of available shards
as this replica observes the shard Leases, so any replica may answer; the sharder corrects an
assignment a replica's older view got wrong, as it corrects anything else.

The configuration (``configuration``) calls it only for objects without the shard label
(``objectSelector``), on CREATE and UPDATE, with ``failurePolicy: Ignore`` and a short
timeout: an unreachable webhook never fails a request, and the object is then assigned by the
sharder. A primary object created with ``generateName`` has no name yet, hence no ring key: it
is left to the sharder too. An owned object goes where its owner is: an owner outside the ring
by the owner's key, at once; an owner in the ring by where the sharder put it on the replica
running the sharder, elsewhere by the owner's key (a guess the sharder corrects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubetrio.api.meta import KubeObject, ObjectMeta, kind_of
from kubetrio.runtime.sharding.labels import object_key, owner_key, shard_label
from kubetrio.runtime.sharding.metaview import metadata_view
from kubetrio.runtime.sharding.sharder import ShardedKind, Sharder
from kubetrio.runtime.webhook.admission import MutatingHandler
from kubetrio.runtime.webhook.review import AdmissionRequest
from kubetrio.runtime.webhook.server import WebhookServer

TIMEOUT_SECONDS = 2


def webhook_path(ring: str, kind: type[KubeObject]) -> str:
    info = kind_of(kind)
    group = info.group.replace(".", "-")
    return f"/shard-{ring}-{group}-{info.version}-{info.kind.lower()}"


class Assigner:
    """The defaulter for one sharded kind: adds the shard label when the object has none."""

    def __init__(self, sharder: Sharder, sharded: ShardedKind) -> None:
        self.sharder = sharder
        self.sharded = sharded
        self.label = shard_label(sharder.options.ring)

    async def default(self, obj: KubeObject, request: AdmissionRequest) -> KubeObject:
        meta = obj.metadata
        if self.label in meta.labels:
            return obj
        if not meta.namespace:
            meta.namespace = request.namespace  # not yet set on a create's object
        owner = self._shard_of(meta)
        if owner is not None:
            meta.labels = {**meta.labels, self.label: owner}
        return obj

    def _shard_of(self, meta: ObjectMeta) -> str | None:
        sharder = self.sharder
        key = owner_key(meta) if self.sharded.controlled else None
        if key is not None:
            if not sharder.owner_in_ring(key):
                return sharder.current_ring().owner(key)
            # Its owner is one of the ring's objects and may sit elsewhere than its key's
            # hash (an owner that follows an owner of its own): the replica running the
            # sharder knows where; elsewhere the hash is a guess the sharder corrects.
            if sharder.synced.is_set() and sharder.ring is not None:
                return sharder.owned_shard(meta)
            return sharder.current_ring().owner(key)
        if self.sharded.controlled and not self.sharded.reconciled:
            return None
        if not meta.name:
            return None
        return sharder.current_ring().owner(object_key(self.sharded.kind, meta))


def register(server: WebhookServer, sharder: Sharder) -> None:
    """Serve the assigner of each of the sharder's kinds on ``server``."""
    for sharded in sharder.kinds:
        assigner = Assigner(sharder, sharded)
        handler = MutatingHandler(metadata_view(sharded.kind), assigner.default)
        server.register(webhook_path(sharder.options.ring, sharded.kind), handler.handle)


def configuration(sharder: Sharder, service: tuple[str, str]) -> dict[str, Any]:
    """The MutatingWebhookConfiguration calling the assigners through Service ``service``
    (namespace, name); ``kubetrio.runtime.webhook.manifest.as_url`` turns it to a URL."""
    return configuration_for(sharder.options.ring, sharder.kinds, service)


def configuration_for(
    ring: str, kinds: Sequence[ShardedKind], service: tuple[str, str]
) -> dict[str, Any]:
    """``configuration`` for ring ``ring`` of ``kinds``, without a sharder at hand."""
    namespace, name = service
    hooks = []
    for sharded in kinds:
        info = kind_of(sharded.kind)
        hook: dict[str, Any] = {
            "admissionReviewVersions": ["v1"],
            "clientConfig": {
                "service": {
                    "name": name,
                    "namespace": namespace,
                    "path": webhook_path(ring, sharded.kind),
                }
            },
            "failurePolicy": "Ignore",
            "matchPolicy": "Equivalent",
            "name": f"{info.kind.lower()}-{info.version}.{info.group or 'core'}.shard.{ring}",
            "objectSelector": {
                "matchExpressions": [{"key": shard_label(ring), "operator": "DoesNotExist"}]
            },
            "rules": [
                {
                    "apiGroups": [info.group],
                    "apiVersions": [info.version],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [info.plural],
                    "scope": "Namespaced" if info.namespaced else "Cluster",
                }
            ],
            "sideEffects": "None",
            "timeoutSeconds": TIMEOUT_SECONDS,
        }
        if sharded.namespace is not None:
            hook["namespaceSelector"] = {
                "matchLabels": {"kubernetes.io/metadata.name": sharded.namespace}
            }
        hooks.append(hook)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": f"kubetrio-sharder-{ring}"},
        "webhooks": hooks,
    }
