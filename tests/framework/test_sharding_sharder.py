"""The sharder on its own: it assigns every object of a ring's kinds to an available shard,
owned objects to their owner's shard, and counts objects per shard."""

from __future__ import annotations

import msgspec

from kubetrio.api.coordination import Lease
from kubetrio.api.core import ConfigMap, Secret
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import RING_LABEL, STATE_LABEL, shard_label
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.webhook import configuration
from kubetrio.runtime.webhook.manifest import as_url
from kubetrio.testing.manager import run_manager
from kubetrio.testing.servers import ApiServer
from kubetrio.testing.waiting import eventually

RING = "owners"
SHARD = shard_label(RING)


class Idle:
    async def reconcile(self, key: ObjectKey) -> Result:
        return Result()


async def test_objects_and_what_they_own_are_assigned(api_server: ApiServer) -> None:
    namespace = api_server.namespace
    admin = api_server.client()
    owner = await admin.create(ConfigMap, {"metadata": {"name": "owner"}}, namespace=namespace)
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "controller": True,
    }
    await admin.create(
        Secret, {"metadata": {"name": "owned", "ownerReferences": [ref]}}, namespace=namespace
    )
    await admin.create(Secret, {"metadata": {"name": "loose"}}, namespace=namespace)

    def setup(manager: Manager, _config: object) -> None:
        manager.controller("idle").for_(ConfigMap, namespace=namespace).owns(
            Secret, namespace=namespace
        ).sharded().complete(Idle())

    options = ShardingOptions(ring=RING, namespace=namespace, shard_id="solo")
    async with run_manager(api_server, setup, sharding=options) as manager:
        assert manager.sharder is not None

        async def assigned() -> None:
            cm = await admin.get(ConfigMap, "owner", namespace=namespace)
            owned = await admin.get(Secret, "owned", namespace=namespace)
            loose = await admin.get(Secret, "loose", namespace=namespace)
            assert cm.metadata.labels.get(SHARD) == "solo"
            assert owned.metadata.labels.get(SHARD) == "solo"
            assert SHARD not in loose.metadata.labels  # owned by nothing in the ring

        await eventually(assigned, interval=0.2, on=[])

        async def lease_labelled() -> None:
            lease = await admin.get(Lease, "solo", namespace=namespace)
            assert lease.metadata.labels == {RING_LABEL: RING, STATE_LABEL: "ready"}

        await eventually(lease_labelled, interval=0.2, on=[])

        # Every ConfigMap of the namespace (a real server adds kube-root-ca.crt), and "owned".
        config_maps = len((await admin.list(ConfigMap, namespace=namespace)).items)

        def counted() -> None:
            value = manager.registry.get_sample_value(
                "kubetrio_sharding_shard_objects", {"ring": RING, "shard": "solo"}
            )
            assert value == config_maps + 1

        await eventually(counted, interval=1.0, on=[], timeout=30)


async def test_the_webhook_assigns_at_creation(api_server: ApiServer) -> None:
    namespace = api_server.namespace
    admin = api_server.client()

    def setup(manager: Manager, _config: object) -> None:
        manager.controller("idle").for_(ConfigMap, namespace=namespace).owns(
            Secret, namespace=namespace
        ).sharded().complete(Idle())

    options = ShardingOptions(ring=RING, namespace=namespace, shard_id="solo", webhook=True)
    async with run_manager(
        api_server, setup, sharding=options, webhook_bind_address="127.0.0.1:0"
    ) as manager:
        sharder = manager.sharder
        assert sharder is not None and manager.webhooks.ca_pem is not None
        doc = as_url(
            configuration(sharder, ("unused", "unused")),
            f"https://127.0.0.1:{manager.bound_ports['webhook']}",
            manager.webhooks.ca_pem,
        )
        doc["metadata"]["name"] += f"-{namespace}"
        path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
        await admin.request("POST", path, body=msgspec.json.encode(doc))
        try:
            await eventually(lambda: sharder.current_ring().members == {"solo"}, on=manager)
            created = await admin.create(
                ConfigMap, {"metadata": {"name": "born-assigned"}}, namespace=namespace
            )
            assert created.metadata.labels.get(SHARD) == "solo"
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "born-assigned",
                "uid": created.metadata.uid,
                "controller": True,
            }
            owned = await admin.create(
                Secret,
                {"metadata": {"generateName": "owned-", "ownerReferences": [ref]}},
                namespace=namespace,
            )
            assert owned.metadata.labels.get(SHARD) == "solo"
        finally:
            await admin.request("DELETE", f"{path}/{doc['metadata']['name']}")


async def test_owned_objects_move_before_their_owner(api_server: ApiServer) -> None:
    """An owner on a shard that is gone (no Lease) moves at once, its owned objects first: its
    new shard finds them in its cache when it first sees the owner."""
    namespace = api_server.namespace
    admin = api_server.client()
    owner = await admin.create(
        ConfigMap, {"metadata": {"name": "owner", "labels": {SHARD: "ghost"}}}, namespace=namespace
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "controller": True,
    }
    await admin.create(
        Secret,
        {"metadata": {"name": "owned", "labels": {SHARD: "ghost"}, "ownerReferences": [ref]}},
        namespace=namespace,
    )

    def setup(manager: Manager, _config: object) -> None:
        manager.controller("idle").for_(ConfigMap, namespace=namespace).owns(
            Secret, namespace=namespace
        ).sharded().complete(Idle())

    options = ShardingOptions(ring=RING, namespace=namespace, shard_id="solo")
    async with run_manager(api_server, setup, sharding=options):

        async def moved() -> None:
            cm = await admin.get(ConfigMap, "owner", namespace=namespace)
            secret = await admin.get(Secret, "owned", namespace=namespace)
            assert cm.metadata.labels.get(SHARD) == "solo"
            assert secret.metadata.labels.get(SHARD) == "solo"
            # Written in this order (both servers number every write from one counter).
            assert int(secret.metadata.resource_version) < int(cm.metadata.resource_version)

        await eventually(moved, interval=0.2, on=[])
