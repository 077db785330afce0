"""The example controller: stamps labelled ConfigMaps with a hash of their data.

A common pattern in miniature (workloads roll when the hash changes) and the shape of every
kubetrio controller: a reconciler reading the cache, writing with a patch, and a ``setup`` that
registers it. Only ConfigMaps labelled ``kubetrio.io/example=true`` are touched.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.cache.store import Lister
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.predicates import has_labels
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.gen.rbac import Permissions, cached, on
from kubetrio.runtime.manager.manager import Manager

LABEL = "kubetrio.io/example"
HASH_ANNOTATION = "kubetrio.io/data-hash"

# The labelled ConfigMaps' informer, and the hash annotation written on them.
RBAC = Permissions(cluster=(*cached(ConfigMap.KIND), on(ConfigMap.KIND, "patch")))


def data_hash(config_map: ConfigMap) -> str:
    canonical = json.dumps(config_map.data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class ConfigMapHasher:
    def __init__(self, client: Client, config_maps: Lister[ConfigMap]) -> None:
        self.client = client
        self.config_maps = config_maps

    async def reconcile(self, key: ObjectKey) -> Result:
        config_map = self.config_maps.get(key.namespace, key.name)
        if config_map is None or config_map.deleting:
            return Result()
        wanted = data_hash(config_map)
        if config_map.metadata.annotations.get(HASH_ANNOTATION) != wanted:
            await self.client.patch(
                ConfigMap,
                key.name,
                {"metadata": {"annotations": {HASH_ANNOTATION: wanted}}},
                namespace=key.namespace,
            )
        return Result()


def setup(manager: Manager, config: Any) -> None:
    informer = manager.cache.informer(ConfigMap, label_selector=f"{LABEL}=true")
    reconciler = ConfigMapHasher(manager.client, informer.lister)
    manager.controller("example").for_(
        ConfigMap, has_labels({LABEL: "true"}), label_selector=f"{LABEL}=true"
    ).complete(reconciler)


async def seed_demo(client: Client) -> None:
    """A few labelled ConfigMaps for the embedded demo (existing ones are left alone)."""
    for name, data in (
        ("web-config", {"listen": ":8080", "workers": "4"}),
        ("db-config", {"pool": "20"}),
        ("feature-flags", {"new-ui": "true"}),
    ):
        body = {
            "metadata": {"name": name, "namespace": "default", "labels": {LABEL: "true"}},
            "data": data,
        }
        if await client.get_or_none(ConfigMap, name, namespace="default") is None:
            await client.create(ConfigMap, body)
